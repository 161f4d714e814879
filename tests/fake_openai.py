"""A fake OpenAI-compatible chat server on loopback: scripted replies, streamed as SSE like the real API."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def conversation_error(messages: list[dict]) -> str | None:
    """The real API's refusal of a conversation whose tool calls and results do not pair up: an assistant message
    with `tool_calls` must be followed by a tool message for each of its ids, and a tool message must answer a call
    of the assistant message before it."""
    open_calls: list[str] = []
    for m in messages:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in open_calls:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                    "'tool_calls'."
                )
            open_calls.remove(m["tool_call_id"])
            continue
        if open_calls:
            break
        open_calls = [c["id"] for c in m.get("tool_calls") or []] if m.get("role") == "assistant" else []
    if open_calls:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(open_calls)}"
        )
    return None


class FakeOpenAI:
    """`script`: replies in order; each is {"content": str} or {"tool_calls": [(name, arguments_dict), ...]},
    optionally with "delay_s" before it is sent."""

    def __init__(self, script: list[dict]):
        self.script = list(script)
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                if not self.path.endswith("/chat/completions") or not fake.script:
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "the fake server has no reply scripted"}}')
                    return
                refused = conversation_error(body.get("messages") or [])
                if refused:  # what the real API answers such a conversation, before any reply is spent
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(
                        json.dumps({"error": {"message": refused, "type": "invalid_request_error"}}).encode()
                    )
                    return
                reply = fake.script.pop(0)
                time.sleep(reply.get("delay_s", 0))  # a slow model, for cancelling a turn mid-way
                try:
                    if body.get("stream"):
                        self._stream(reply, body)
                    else:
                        self._whole(reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a cancelled turn)
                    pass

            def _whole(self, reply):
                message = {"role": "assistant", "content": reply.get("content")}
                if reply.get("tool_calls"):
                    message["tool_calls"] = [
                        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                        for i, (n, a) in enumerate(reply["tool_calls"])
                    ]
                data = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "fake",
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply, body):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()

                def send(delta, finish=None):
                    chunk = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": "fake",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
                    self.wfile.flush()

                send({"role": "assistant", "content": ""})
                text = reply.get("content") or ""
                for i in range(0, len(text), 8):
                    send({"content": text[i : i + 8]})
                for i, (name, args) in enumerate(reply.get("tool_calls") or []):
                    raw = json.dumps(args, ensure_ascii=False)
                    send(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": f"call_{len(fake.requests)}_{i}",
                                    "type": "function",
                                    "function": {"name": name, "arguments": ""},
                                }
                            ]
                        }
                    )
                    for j in range(0, len(raw), 10):
                        send({"tool_calls": [{"index": i, "function": {"arguments": raw[j : j + 10]}}]})
                send({}, "tool_calls" if reply.get("tool_calls") else "stop")
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": "fake",
                        "choices": [],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                    self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def wait_for_request(self, count: int, timeout_s: float = 60) -> None:
        """Until `count` requests have arrived: a test that cancels a turn waits for its request to reach the model,
        or on a loaded machine the cancel lands before it and the script's replies go to the wrong questions."""
        deadline = time.monotonic() + timeout_s
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the fake model got {len(self.requests)} requests, not {count}, in {timeout_s} s")
            time.sleep(0.05)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
