"""Log lines carry the request or task they belong to, as text or JSON, in web processes and Celery workers."""

from __future__ import annotations

import datetime
import io
import json
import logging
import logging.config

import pytest
from celery import Celery
from celery.signals import setup_logging
from django.http import HttpResponse
from django.test import RequestFactory
from gunicorn.config import Config
from gunicorn.glogging import Logger

from config import web_server
from config.logging import RequestIdMiddleware, logging_config


@pytest.fixture
def captured():
    """The settings' logging config with its console handler writing into a buffer, per format."""
    def configure(log_format: str) -> io.StringIO:
        config = logging_config("INFO", log_format)
        buffer = io.StringIO()
        config["handlers"]["console"]["stream"] = buffer
        logging.config.dictConfig(config)
        return buffer
    yield configure
    from django.conf import settings
    logging.config.dictConfig(settings.LOGGING)


def _log_in_request(request_id: str | None = None) -> HttpResponse:
    def view(request):
        logging.getLogger("rag.views").info("document shown", extra={"document_id": 7})
        return HttpResponse("ok")
    headers = {"HTTP_X_REQUEST_ID": request_id} if request_id else {}
    return RequestIdMiddleware(view)(RequestFactory().get("/documents/7/", **headers))


def test_json_lines_carry_the_request_id_the_response_returns(captured):
    buffer = captured("json")
    response = _log_in_request()
    line = json.loads(buffer.getvalue().splitlines()[-1])
    assert line["message"] == "document shown" and line["level"] == "INFO" and line["logger"] == "rag.views"
    assert line["document_id"] == 7 and line["task_id"] is None
    assert line["request_id"] == response["X-Request-ID"] and len(line["request_id"]) == 32


def test_a_proxys_request_id_is_kept_and_a_malformed_one_replaced(captured):
    buffer = captured("text")
    assert _log_in_request("edge-42")["X-Request-ID"] == "edge-42"
    assert 'request_id="edge-42"' in buffer.getvalue()
    assert _log_in_request('bad id" x=1')["X-Request-ID"] != 'bad id" x=1'


def test_text_lines_outside_a_request_or_task_stay_as_they_were(captured):
    buffer = captured("text")
    logging.getLogger("rag.jobs").info("job finished", extra={"job_id": 3})
    assert buffer.getvalue().rstrip().endswith("INFO rag.jobs job finished job_id=3")


def test_json_lines_carry_the_celery_task_id(captured):
    buffer = captured("json")
    app = Celery("logging-test", set_as_current=False)

    @app.task(bind=True)
    def index(self):
        logging.getLogger("rag.jobs.run").info("indexed")
        return self.request.id

    task_id = index.apply().get()
    line = json.loads(buffer.getvalue().splitlines()[-1])
    assert line["task_id"] == task_id and line["request_id"] is None


def test_celery_workers_keep_docents_logging():
    from django.conf import settings

    from config.celery import _docent_logging, app
    assert app.conf.worker_hijack_root_logger is False
    assert any(receiver() is _docent_logging for _, receiver in setup_logging.receivers)
    assert settings.LOGGING["handlers"]["console"]["filters"] == ["health_probe", "context"]


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ValueError, match="LOG_FORMAT"):
        logging_config("INFO", "xml")


def test_the_access_log_leaves_query_strings_and_referrers_out():
    """Issue 49: search text (`/documents/?q=...`, `/api/v1/search?q=...`) was written to the access log."""
    config = Config()
    config.set("accesslog", "-")
    config.set("access_log_format", web_server.access_log_format)
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/documents/?q=salary+review", "PATH_INFO": "/documents/",
               "QUERY_STRING": "q=salary+review", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "192.0.2.1",
               "HTTP_REFERER": "http://docent.example/api/v1/search?q=layoffs", "HTTP_USER_AGENT": "curl"}
    response = type("Response", (), {"status": "200 OK", "sent": 12, "headers": [("X-Request-ID", "abc123")]})()
    logger = Logger(config)
    line = web_server.access_log_format % logger.atoms_wrapper_class(
        logger.atoms(response, environ, environ, datetime.timedelta(seconds=0.25)))
    assert '"GET /documents/ HTTP/1.1" 200' in line and line.endswith("250ms abc123")
    assert "salary" not in line and "layoffs" not in line and "?" not in line
