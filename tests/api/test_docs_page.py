"""Swagger UI at /docs works offline: its files come from the app, not a CDN."""


def test_swagger_ui_is_served_without_internet(client):
    page = client.get("/docs")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "/docs-assets/swagger-ui-bundle.js" in html and "cdn." not in html
    js = client.get("/docs-assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and len(js.data) > 100_000
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200
    assert client.get("/docs-assets/nothing.js").status_code == 404
