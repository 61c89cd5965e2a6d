"""Prometheus metrics scraped from `/metrics` and parsed as Prometheus does."""
from prometheus_client.parser import text_string_to_metric_families


def scrape(client, **kwargs) -> dict:
    """Every sample of a scrape, by (name, sorted labels)."""
    answer = client.get("/metrics", **kwargs)
    assert answer.status_code == 200 and answer.mimetype == "text/plain"
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.get_data(as_text=True)) for sample in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    """One sample's value (0 when absent)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: dict, after: dict, name: str, **labels) -> float:
    """How much one sample moved between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)
