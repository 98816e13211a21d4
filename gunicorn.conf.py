"""gunicorn reads this file from the folder it starts in when no --config is given, so that Docent's hooks
(config/web_server.py: the bind checked before it listens, the query encoder built after the fork, the access
log without query strings, a quick exit) apply to a web server started by hand as they do to `make run`'s."""

from config.web_server import access_log_format, on_starting, post_worker_init, worker_exit  # noqa: F401 - read by name
