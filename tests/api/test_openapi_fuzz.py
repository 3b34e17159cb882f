"""Property-based run over /openapi.json (schemathesis): no request may cause a 5xx.

Requests carry an organizer's token so they reach the handlers (not only the 401 path).
Bounded to a few examples per operation so the whole run stays well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from api import create_app
from arena.core.accounts import create_account
from arena.core.config import Settings
from arena.core.db.migrate import upgrade
from arena.core.db.models import Bot
from arena.core.db.session import make_engine, make_sessionmaker
from tests.api.conftest import _fresh_pg_database


@pytest.fixture
def fuzz_app(pg_url, redis_url, tmp_path):
    url = _fresh_pg_database(pg_url)
    upgrade(url)
    engine = make_engine(url)
    broker = redis_url.rsplit("/", 1)[0] + "/7"  # a Redis database of its own
    app = create_app(Settings(data_dir=tmp_path, database_url=url, broker_url=broker,
                              allow_private_bot_urls=False), engine=engine)
    with make_sessionmaker(engine)() as s:
        account, token = create_account(s, "fuzz-org", "organizer")
        s.add(Bot(owner_id=account.id, name="b", url="http://93.184.215.14/", rulesets=["million_doubt"],
                  secret="s" * 64, status="ready"))
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
    assert len(operations) >= 18
    seen: list[int] = []

    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=12, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case):
            response = case.call(headers=headers)
            seen.append(response.status_code)
            assert response.status_code < 500, (case.method, case.path, case.body, case.query,
                                                response.status_code, response.text[:300])
            if response.status_code >= 400:
                body = response.json()
                assert body["code"] == response.status_code and body["message"]

        check()
    print(f"{len(seen)} requests, statuses {sorted(set(seen))}")
    assert len(seen) >= 5 * len(operations)
    assert any(code < 300 for code in seen) and any(code == 422 for code in seen)
