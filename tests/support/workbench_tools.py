"""Studio applications as workbench tools: a workbench style, two customers' profiles, and an
application made live."""
WORKBENCH = {"title": "Refund desk", "theme": "emerald", "density": "compact", "list_width": 380,
             "details_width": 440, "tools_position": "before_profile"}
PROFILE = {"name": "Zebulon Quaxworth", "phone": "+86 139 1234 5678", "email": "zeb.quax@customer.example",
           "support_note": "VIP-NOTE-7731 prefers calls"}
OTHER = {"name": "Yolanda Other", "phone": "+86 137 0000 1111", "email": "yolanda@customer.example",
         "support_note": "OTHER-NOTE-4410"}


def publish_live(api, definition: dict, app_id: str | None = None, sample: dict | None = None, **publish) -> str:
    """Create (or version) an application with `definition` and make that version live."""
    if app_id is None:
        app_id, version, expected = api.create(definition), 1, None
    else:
        response = api.post(f"/{app_id}/versions", {"definition": definition})
        version = response.get_json()["data"]["version"]
        expected = version - 1
    assert api.simulate(app_id, version, sample).status_code == 200
    assert api.publish(app_id, version, expected, **publish).status_code == 200
    return app_id
