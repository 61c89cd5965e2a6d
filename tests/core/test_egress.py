"""The SSRF-safe client against a real HTTPS receiver on loopback (trustme CA, test knobs)."""
import threading

import pytest

from core import egress
from tests.peers import HttpsReceiver


def post(url: str) -> egress.Response:
    return egress.post(url, b'{"a":1}', {"Content-Type": "application/json"})


def test_posts_to_the_checked_address_with_sni_and_host_of_the_name(receiver, dns):
    dns["receiver.test"] = [["127.0.0.1"]]
    answer = post(receiver.url())
    assert (answer.status, answer.body) == (200, b"ok")
    (seen,) = receiver.received
    assert seen.body == b'{"a":1}' and seen.path == "/hook"
    assert seen.server_name == "receiver.test" and seen.headers["Host"] == f"receiver.test:{receiver.port}"


def test_a_certificate_for_another_name_is_refused(receiver, dns):
    dns["impostor.test"] = [["127.0.0.1"]]
    with pytest.raises(egress.EgressFailed) as failed:
        post(receiver.url("impostor.test"))
    assert failed.value.reason == "tls_error" and receiver.received == []


@pytest.mark.parametrize("url,reason", [
    ("http://receiver.test/hook", "https_required"),
    ("https://receiver.test:8443/hook", "port_not_allowed"),
    ("https://receiver.test:0/hook", "port_not_allowed"),
    ("https://receiver.test:00/hook", "port_not_allowed"),
    ("https://receiver.test/hook?q=1", "query_not_allowed"),
    ("https://receiver.test/hook#frag", "query_not_allowed"),
    ("https://user:pass@receiver.test/hook", "credentials_in_url"),
    ("https://[::1]/hook", "ipv6_not_supported"),
    ("https://[::ffff:127.0.0.1]/hook", "ipv6_not_supported"),
    ("ftp://receiver.test/hook", "https_required"),
])
def test_url_shapes_that_are_refused(app, url, reason):
    with pytest.raises(egress.EgressRefused) as refused:
        post(url)
    assert refused.value.reason == reason


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "224.0.0.1", "240.0.0.1", "198.18.0.1"])
def test_a_name_resolving_to_an_internal_address_is_refused(app, dns, address):
    dns["internal.example"] = [[address]]
    with pytest.raises(egress.EgressRefused) as refused:
        post("https://internal.example/hook")
    assert refused.value.reason == "address_not_public"


def test_one_internal_answer_among_public_ones_is_refused(app, dns):
    dns["mixed.example"] = [["93.184.216.34", "10.0.0.1"]]
    with pytest.raises(egress.EgressRefused) as refused:
        post("https://mixed.example/hook")
    assert refused.value.reason == "address_not_public"


def test_a_host_without_an_ipv4_answer_is_refused(app, dns):
    with pytest.raises(egress.EgressRefused) as refused:
        post("https://ipv6-only.example/hook")
    assert refused.value.reason == "dns_failed"


@pytest.mark.parametrize("literal", ["127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.0.1"])
def test_ip_literals_follow_the_same_rule(app, literal):
    with pytest.raises(egress.EgressRefused) as refused:
        post(f"https://{literal}/hook")
    assert refused.value.reason == "address_not_public"


def test_dns_is_checked_at_every_use_so_rebinding_is_refused(receiver, dns):
    dns["receiver.test"] = [["127.0.0.1"], ["10.0.0.1"]]  # public (by the knob) first, then private
    assert post(receiver.url()).status == 200
    with pytest.raises(egress.EgressRefused) as refused:
        post(receiver.url())
    assert refused.value.reason == "address_not_public" and len(receiver.received) == 1


def test_redirects_are_not_followed(receiver, dns, ca):
    internal = HttpsReceiver(ca).start()
    try:
        dns["receiver.test"] = [["127.0.0.1"]]
        receiver.answers.append((302, {"Location": f"https://127.0.0.1:{internal.port}/admin"}, b""))
        assert post(receiver.url()).status == 302
        assert internal.received == [] and len(receiver.received) == 1
    finally:
        internal.stop()


def test_an_oversized_response_is_cut_off(receiver, dns):
    dns["receiver.test"] = [["127.0.0.1"]]
    receiver.answers.append((200, {}, b"x" * (egress.RESPONSE_LIMIT + 1)))
    with pytest.raises(egress.EgressFailed) as failed:
        post(receiver.url())
    assert failed.value.reason == "response_too_large"


def test_without_the_knobs_loopback_is_never_public(app, dns):
    dns["receiver.test"] = [["127.0.0.1"]]
    with pytest.raises(egress.EgressRefused) as refused:
        post("https://receiver.test/hook")
    assert refused.value.reason == "address_not_public"


def test_an_international_host_name_is_sent_in_its_ascii_form(app):
    assert egress.check_url("https://bücher.example/hook").host == "xn--bcher-kva.example"


@pytest.mark.parametrize("at_once,close", [(0, False), (39, False), (60, True)],
                         ids=["status line and headers", "body", "body after Connection: close"])
def test_an_answer_trickled_a_byte_at_a_time_cannot_outlast_the_attempt(receiver, dns, at_once, close):
    dns["receiver.test"] = [["127.0.0.1"]]
    receiver.default = (200, {}, b"x" * 40)
    receiver.trickle = (0.25, at_once, close)  # the whole answer would take 10 s or more
    with pytest.raises(egress.EgressFailed) as failed:
        egress.post(receiver.url(), b"{}", {}, timeout=1.5)
    assert failed.value.reason == "timeout"
    assert receiver.trickle_over.wait(30) and receiver.trickled_all is False  # it hung up at the deadline


def test_a_slow_dns_answer_counts_against_the_attempt(receiver, dns, monkeypatch):
    import threading

    answer, released, order = egress.resolver, threading.Event(), []

    def slow_lookup(*args):
        released.wait(10)
        order.append("lookup answered")
        return answer(*args)

    dns["receiver.test"] = [["127.0.0.1"]]
    monkeypatch.setattr(egress, "resolver", slow_lookup)
    with pytest.raises(egress.EgressFailed) as failed:
        egress.post(receiver.url(), b"{}", {}, timeout=1)
    order.append("attempt ended")
    released.set()
    assert failed.value.reason == "timeout" and order[0] == "attempt ended"  # it did not wait for DNS


def test_no_connection_is_kept_alive_each_post_checks_dns_and_connects_afresh(receiver, dns):
    """Even when the peer offers to keep the connection, the next POST resolves and checks the name
    again and connects to the address it just checked: nothing outlives its own check."""
    receiver.keep_alive = True
    dns["receiver.test"] = [["127.0.0.1"], ["127.0.0.1"], ["10.0.0.1"]]
    assert post(receiver.url()).status == 200 and post(receiver.url()).status == 200
    first, second = receiver.received
    assert first.client_port != second.client_port  # two TCP connections
    with pytest.raises(egress.EgressRefused) as refused:  # the third lookup rebinds: refused, not reused
        post(receiver.url())
    assert refused.value.reason == "address_not_public" and len(receiver.received) == 2


def test_the_shared_tls_context_still_checks_every_connection_s_name(receiver, dns):
    dns["receiver.test"] = [["127.0.0.1"]]
    dns["impostor.test"] = [["127.0.0.1"]]
    assert post(receiver.url()).status == 200  # the context for this CA bundle now exists
    with pytest.raises(egress.EgressFailed) as failed:
        post(receiver.url("impostor.test"))
    assert failed.value.reason == "tls_error" and len(receiver.received) == 1
    assert egress.tls_context(egress.ca_bundle()) is egress.tls_context(egress.ca_bundle())


def test_every_attempt_s_deadline_rings_on_the_one_watchdog_thread(receiver, dns):
    dns["receiver.test"] = [["127.0.0.1"]]
    for _ in range(5):
        assert post(receiver.url()).status == 200
    assert [thread.name for thread in threading.enumerate()].count("egress-watchdog") == 1


@pytest.mark.parametrize("url", ["https://crm.example.com/hook", "https://crm.example.com", "https://93.184.216.34/a",
                                 "https://bücher.example/hook", "https://xn--bcher-kva.example/hook",
                                 "https://crm.example.com/a;b=c/d@e:f~g%20h"])
def test_normal_addresses_pass_the_one_parser(app, url):
    assert egress.check_url(url).port == 443


def test_a_stored_address_that_is_not_normal_is_refused_at_use_too(app):
    with pytest.raises(egress.EgressRefused) as refused:
        post("https://crm.example.com/a\r\nX-Injected: 1")
    assert refused.value.reason == "invalid_characters"
