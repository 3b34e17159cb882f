"""Property-based run over /openapi.json (schemathesis): no request may cause a 5xx.

Requests carry an organizer's token so they reach the handlers (not only the 401 path).
Bounded to a few examples per operation so the whole run stays well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Bot
from arena.db.session import make_engine, make_sessionmaker
from tests.helpers import migrated_pg_database

#: Real PostgreSQL and Redis (the fixture): named here so that ``test.sh --fast`` skips the file.
pytestmark = pytest.mark.services


@pytest.fixture
def fuzz_app(pg_url, redis_url, tmp_path):
    url = migrated_pg_database(pg_url)
    engine = make_engine(url)
    broker = redis_url.rsplit("/", 1)[0] + "/7"  # a Redis database of its own
    app = create_app(
        Settings(
            data_dir=tmp_path, database_url=url, broker_url=broker, allow_private_bot_urls=False, rate_limits=False
        ),
        engine=engine,
    )
    with make_sessionmaker(engine)() as s:
        account, token = create_account(s, "fuzz-org", "organizer")
        s.add(
            Bot(
                owner_id=account.id,
                name="b",
                url="http://93.184.215.14/",
                rulesets=["million_doubt"],
                secret="s" * 64,
                status="ready",
            )
        )
        s.commit()
    app.config["FUZZ_TOKEN"] = token
    yield app
    engine.dispose()


@pytest.fixture
def api_schema(fuzz_app):
    return schemathesis.openapi.from_wsgi("/openapi.json", fuzz_app)


def test_openapi_document_is_valid_openapi_3(fuzz_app):
    # The official OpenAPI 3.0 JSON Schema, as shipped inside schemathesis.
    from jsonschema import Draft4Validator
    from schemathesis.specs.openapi.definitions import OPENAPI_30

    doc = fuzz_app.test_client().get("/openapi.json").json
    assert doc["openapi"].startswith("3.0")
    errors = sorted(str(e.message) for e in Draft4Validator(OPENAPI_30).iter_errors(doc))
    assert errors == []
    broken = dict(doc, paths={"/x": {"get": {"responses": {"200": {"no-description": 1}}}}})
    assert list(Draft4Validator(OPENAPI_30).iter_errors(broken))  # the validator does catch errors


def test_no_server_errors(fuzz_app):
    """Every operation, a dozen generated cases each (positive and negative), no 5xx."""
    schema = schemathesis.openapi.from_wsgi("/openapi.json", fuzz_app)
    headers = {"Authorization": f"Bearer {fuzz_app.config['FUZZ_TOKEN']}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    # Rotating the token ends it: fuzz that operation last, or every later one is only a 401.
    operations.sort(key=lambda op: (op.method.upper(), op.path) == ("POST", "/api/v1/accounts/me/token"))
    assert len(operations) >= 18
    seen: list[int] = []

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=12, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        def check(case):
            response = case.call(headers=headers)
            seen.append(response.status_code)
            assert response.status_code < 500, (
                case.method,
                case.path,
                case.body,
                case.query,
                response.status_code,
                response.text[:300],
            )
            if response.status_code >= 400:
                body = response.json()
                assert body["code"] == response.status_code and body["message"]

        check()
    print(f"{len(seen)} requests, statuses {sorted(set(seen))}")
    assert len(seen) >= 5 * len(operations)
    assert any(code < 300 for code in seen) and any(code == 422 for code in seen)


#: Raw JSON values no 5xx may come from: nesting (also past the parser's recursion limit), a
#: 5000-digit integer, NUL, a lone surrogate, an oversized string, NaN, an overflowing float.
HOSTILE_JSON = {
    "deep": "[" * 100 + "]" * 100,
    "deeper": "[" * 100_000 + "]" * 100_000,
    "bigint": "9" * 5000,
    "nul": '"a\\u0000b"',
    "surrogate": '"\\udc00"',
    "long": '"' + "x" * 20_000 + '"',
    "nan": "NaN",
    "overflow": "1e400",
}
#: Query values: NUL, an encoded lone surrogate, a 5000-digit integer, an oversized value.
HOSTILE_QUERY = {"nul": "1%00", "surrogate": "%ED%B0%80", "bigint": "9" * 5000, "long": "x" * 5000}


def test_hostile_values_in_every_body_field_and_query_parameter(fuzz_app):
    """Each JSON body field and each query parameter of every operation gets each hostile value
    (path parameters from a schemathesis case): a 4xx naming the field every time, never a 5xx."""
    schema = schemathesis.openapi.from_wsgi("/openapi.json", fuzz_app)
    doc = fuzz_app.test_client().get("/openapi.json").json
    client = fuzz_app.test_client()
    headers = {"Authorization": f"Bearer {fuzz_app.config['FUZZ_TOKEN']}"}
    sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        cases = []

        @given(case=operation.as_strategy())
        @settings(
            max_examples=1, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
        )
        def grab(case):
            cases.append(case)  # noqa: B023 (called right here, in this iteration)

        grab()
        path, method = cases[0].formatted_path, operation.method.lower()
        spec = doc["paths"][operation.path][method]
        query_names = [p["name"] for p in spec.get("parameters", []) if p["in"] == "query"]
        body_fields = []
        if "requestBody" in spec:
            ref = spec["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
            body_fields = list(doc["components"]["schemas"][ref].get("properties", {}))
        for field in body_fields:
            for kind, raw in HOSTILE_JSON.items():
                r = client.open(
                    path,
                    method=method.upper(),
                    data='{"' + field + '": ' + raw + "}",
                    content_type="application/json",
                    headers=headers,
                )
                sent += 1
                assert 400 <= r.status_code < 500, (method, path, field, kind, r.status_code, r.get_data()[:300])
                assert r.json["code"] == r.status_code and r.json["message"]
                if kind not in ("deeper", "nan", "overflow") and r.status_code in (400, 422):
                    assert f"json.{field}" in r.json["message"], (method, path, field, kind, r.json)
        for name in query_names:
            for kind, raw in HOSTILE_QUERY.items():
                r = client.open(f"{path}?{name}={raw}", method=method.upper(), headers=headers)
                sent += 1
                assert 400 <= r.status_code < 500, (method, path, name, kind, r.status_code, r.get_data()[:300])
                assert f"query.{name}" in r.json["message"], (method, path, name, kind, r.json)
    print(f"{sent} hostile requests")
    assert sent > 100
