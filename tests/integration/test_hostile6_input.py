"""What a fresh hostile pass over input, configuration, secrets and terminals found (issue 30, round six), as
regression tests: files asked for are checked before the work, a setting is named where it was set, URLs and
labels a driver would choke on are bad input (exit 2), and what an endpoint echoes back (escape sequences, the
key in base64) reaches neither the terminal nor a file."""

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import ingested_home, last_error_line, run_cli


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    home = ingested_home(tmp_path_factory, "hostile6-home")
    yield home
    run_cli(home, "graph", "stop")


@pytest.fixture
def endpoint():
    """An OpenAI-compatible endpoint whose 401 says what `reply(key)` makes of the key it was sent."""
    replies = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = self.headers.get("Authorization", "").partition(" ")[2]
            message = replies["reply"](key)
            if replies.get("status", 401) == 200:  # one JSON answer, whatever the request asked for
                choice = {"index": 0, "message": {"role": "assistant", "content": message}, "finish_reason": "stop"}
                answer = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
                payload = json.dumps(answer).encode()
            else:
                payload = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            self.send_response(replies.get("status", 401))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield replies, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


# -- secrets and terminals -----------------------------------------------------------------------------
def test_a_key_echoed_in_base64_is_neither_printed_nor_stored(sample_home, endpoint):
    replies, url = endpoint
    replies["reply"] = lambda key: "key " + base64.b64encode(key.encode()).decode() + " is not valid"
    key = "sk-Zq9wXv7Lm3Np"
    encoded = base64.b64encode(key.encode()).decode()
    for debug in ([], ["--debug"]):
        args = [*debug, "ask", "ERR_TIMEOUT 是什么？", "--session", f"b64-{len(debug)}"]
        r = run_cli(sample_home, *args, OPENAI_BASE_URL=url, OPENAI_API_KEY=key, EXECUTOR_LLM_TIMEOUT_S="10")
        assert r.returncode == 1 and "401" in r.stderr, r.stderr
        assert encoded not in r.stdout + r.stderr and key not in r.stdout + r.stderr, r.stderr
    for stored in ("checkpoints.sqlite", "checkpoints.sqlite-wal", "executor.db", "executor.db-wal"):
        path = sample_home / stored
        if path.exists():
            assert encoded.encode() not in path.read_bytes(), stored


def test_a_debug_traceback_shows_the_escape_sequences_an_endpoint_sends(sample_home, endpoint):
    replies, url = endpoint
    replies["reply"] = lambda key: "\x1b]52;c;cHduZWQ=\x07\x1b[2J denied"
    r = run_cli(sample_home, "--debug", "ask", "ERR_TIMEOUT 是什么？", OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-x1")
    assert r.returncode == 1 and "Traceback" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr, r.stderr
    assert "\\x1b]52;c;cHduZWQ=" in r.stderr, r.stderr


def test_an_endpoint_that_ignores_streaming_is_named_not_a_class_name(sample_home, endpoint):
    replies, url = endpoint
    replies.update(status=200, reply=lambda key: "an answer, not streamed")
    r = run_cli(sample_home, "ask", "ERR_TIMEOUT 是什么？", OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-x1")
    line = last_error_line(r, 1)
    assert "the LLM endpoint sent no streamed answer" in line and "OPENAI_BASE_URL" in line, line
    assert "ValueError" not in line, line


def test_json_output_escapes_c1_controls_from_a_description(tmp_path):
    home = tmp_path / "h"
    description = "notes \x9b31m red \x1b]0;title\x07"
    assert run_cli(home, "kb", "create", "notes", "--description", description).returncode == 0
    for args in (["kb", "list", "--json"], ["kb", "show", "notes", "--json"]):
        r = run_cli(home, *args)
        assert r.returncode == 0, r.stderr
        assert not any(c in r.stdout for c in "\x1b\x07\x9b"), r.stdout
        data = json.loads(r.stdout)
        shown = data[0]["description"] if isinstance(data, list) else data["description"]
        assert shown == description  # the same JSON: the escapes decode to the text as given


# -- files a command is asked to write --------------------------------------------------------------------
def test_a_plot_or_report_named_as_a_folder_is_bad_input_before_any_work(tmp_path):
    home = tmp_path / "h"
    folder = tmp_path / "out"
    folder.mkdir()
    for args, option in (
        (["stats", "--plot", str(folder)], "--plot"),
        (["eval", "--report-json", str(folder)], "--report-json"),
        (["eval", "--plot", str(folder)], "--plot"),
        (["kg", "x", "--html", str(folder)], "--html"),
        (["eval-retrieval", "--labels", str(tmp_path / "l.yaml"), "--markdown", str(folder)], "--markdown"),
    ):
        line = last_error_line(run_cli(home, *args, timeout=60), 2)
        assert f"{option} {folder} is a folder" in line, line
    assert not (tmp_path / "out.png").exists()  # matplotlib wrote FOLDER.png beside it, and the command said 0


def test_a_plot_needs_a_png_name_and_an_unwritable_one_is_one_line(tmp_path):
    home = tmp_path / "h"
    line = last_error_line(run_cli(home, "stats", "--plot", str(tmp_path / "stats")), 2)
    assert "--plot" in line and "must end in .png" in line, line
    assert not (tmp_path / "stats.png").exists()
    line = last_error_line(run_cli(home, "stats", "--plot", str(tmp_path / "missing" / "stats.png")), 1)
    assert line.startswith("error: --plot: cannot write") and "No such file or directory" in line, line


# -- settings named where they were set ----------------------------------------------------------------
def test_a_wrongly_typed_value_in_config_yaml_names_the_file_not_a_variable(tmp_path):
    config = tmp_path / "team.yaml"
    config.write_text("lookup_budget: lots\n", encoding="utf-8")
    line = last_error_line(run_cli(tmp_path / "h", "kb", "list", EXECUTOR_CONFIG=str(config)), 2)
    assert f"invalid setting {config} (lookup_budget)" in line and "EXECUTOR_LOOKUP_BUDGET" not in line, line
    # the variable, when it is the variable that set it
    env = {"EXECUTOR_CONFIG": str(config), "EXECUTOR_LOOKUP_BUDGET": "many"}
    line = last_error_line(run_cli(tmp_path / "h", "kb", "list", **env), 2)
    assert "invalid setting EXECUTOR_LOOKUP_BUDGET (lookup_budget)" in line, line


def test_a_home_with_a_tilde_is_in_the_users_home_not_a_folder_named_tilde(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    r = run_cli("~/exec-home", "kb", "create", "notes", HOME=str(user))
    assert r.returncode == 0, r.stderr
    assert (user / "exec-home" / "executor.db").exists()
    assert not any(p.name == "~" for p in tmp_path.rglob("~")), list(tmp_path.rglob("*"))


@pytest.mark.parametrize(
    "env, named",
    [
        ({"EXECUTOR_DATABASE_URL": "nope://u:s3cretPw6@h/x"}, "EXECUTOR_DATABASE_URL"),
        ({"FALKORDB_URL": "garbage"}, "FALKORDB_URL"),
        ({"FALKORDB_URL": "http://:s3cretPw6@127.0.0.1:6379"}, "FALKORDB_URL"),
        ({"NEO4J_URI": "garbage://neo:s3cretPw6@127.0.0.1:7687"}, "NEO4J_URI"),
    ],
)
def test_a_url_its_driver_cannot_take_is_a_bad_setting_named(tmp_path, env, named):
    line = last_error_line(run_cli(tmp_path / "h", "kb", "list", **env), 2)
    assert line.startswith(f"error: invalid setting {named}"), line
    assert "s3cretPw6" not in line and "Error" not in line, line


def test_a_checkpoint_url_that_is_not_postgres_is_a_bad_setting(sample_home):
    r = run_cli(sample_home, "ask", "ERR_TIMEOUT 是什么？", EXECUTOR_CHECKPOINT_URL="mysql://u@h/x")
    line = last_error_line(r, 2)
    assert "EXECUTOR_CHECKPOINT_URL must be a postgresql:// URL" in line, line


# -- labels and model files ----------------------------------------------------------------------------
def test_a_labels_file_not_utf8_or_nested_too_deep_is_one_line_naming_it(tmp_path):
    home = tmp_path / "h"
    binary = tmp_path / "labels.yaml"
    binary.write_bytes(b"\xff\xfe- query: x\n")
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    for command in ("eval-retrieval", "calibrate", "calibrate-repeats"):
        line = last_error_line(run_cli(home, command, "--labels", str(binary)), 2)
        assert f"--labels {binary}: not UTF-8 text (byte 0)" in line, line
        line = last_error_line(run_cli(home, command, "--labels", str(deep)), 2)
        assert str(deep) in line and "Error)" not in line and "depth" in line, line


def test_a_model_named_as_a_folder_says_so(tmp_path):
    line = last_error_line(run_cli(tmp_path / "h", "llm", "serve", "--model", str(tmp_path)), 2)
    assert line == f"error: {tmp_path} is a folder: name the .gguf file in it", line
