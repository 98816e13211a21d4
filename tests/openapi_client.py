"""A client that uses the API the way an integrator's generated client would: by its OpenAPI schema.

Each call must name a path and method the schema lists, and the answer must be one of the statuses the
schema declares for it, with a body its JSON schema accepts.
"""

from __future__ import annotations

import json
from typing import Any

from django.test import Client
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

SCHEMA_URL = "/api/v1/openapi.json"


class SchemaClient:
    def __init__(self, client: Client, *, token: str = "") -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = client.get(SCHEMA_URL)
        assert response.status_code == 200, response.content
        self.schema: dict[str, Any] = response.json()
        validate(self.schema)  # a valid OpenAPI document, as a generator would read it

    def call(self, method: str, path: str, template: str, *, status: int, body: Any = None,
             params: dict | None = None) -> Any:
        """`path` as sent, `template` as the schema names it ("/api/v1/conversations/{conversation_id}")."""
        operation = self.schema["paths"][template][method.lower()]
        if method == "GET":
            response = self.client.get(path, params or {}, headers=self.headers)
        else:
            response = self.client.generic(method, path, json.dumps(body), content_type="application/json",
                                           headers=self.headers)
        assert response.status_code == status, (path, response.status_code, response.content[:500])
        declared = operation["responses"][str(status)]["content"]["application/json"]["schema"]
        data = response.json()
        Draft202012Validator({**declared, "components": self.schema["components"]}).validate(data)
        return data
