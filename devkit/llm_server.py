"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol, streamed or not."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    def __init__(self, reply: str = "The limit is 1200 requests per minute [1].", *, status: int = 200,
                 delay: float = 0.0, word_delay: float = 0.0, body: bytes | None = None,
                 byte_delay: float = 0.0) -> None:
        """`body`: sent as it is instead of a completion (a malformed answer). `byte_delay`: the reply streamed
        one byte at a time, this many seconds apart, in a single event line that ends only after the whole reply."""
        self.reply, self.status, self.delay, self.word_delay, self.body = reply, status, delay, word_delay, body
        self.byte_delay = byte_delay
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if owner.delay:
                    time.sleep(owner.delay)
                try:
                    if owner.status != 200:
                        self.send_response(owner.status)
                        self.end_headers()
                        self.wfile.write(b'{"error": {"message": "overloaded"}}')
                    elif owner.body is not None or not body.get("stream"):
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.end_headers()
                        self.wfile.write(owner.body if owner.body is not None else json.dumps(
                            {"choices": [{"index": 0, "message": {"role": "assistant", "content": owner.reply}}]}).encode())
                    else:
                        self._stream()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (its deadline): that is the test

            def _stream(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if owner.byte_delay:
                    self._trickle()
                    return
                for word in owner.reply.split(" "):
                    piece = {"choices": [{"index": 0, "delta": {"content": word + " "}}]}
                    self.wfile.write(f"data: {json.dumps(piece)}\n\n".encode())
                    self.wfile.flush()
                    time.sleep(owner.word_delay)  # a server that trickles: only a total deadline stops it
                self.wfile.write(b"data: [DONE]\n\n")

            def _trickle(self) -> None:
                """Bytes, never a newline until the end: each read gets something, so only a total deadline stops it."""
                piece = {"choices": [{"index": 0, "delta": {"content": owner.reply}}]}
                for byte in f"data: {json.dumps(piece)}".encode():
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(owner.byte_delay)
                self.wfile.write(b"\n\ndata: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
