"""A local model behind an OpenAI-compatible endpoint (`executor llm serve`, EXECUTOR_LOCAL_MODEL).

llama.cpp's server (in-process, through xllamacpp) runs the GGUF; a small
Starlette app in front of it speaks `/v1/chat/completions` and turns tool
calling into grammar-constrained decoding, because small models' chat
templates have no tool support. The agent only ever sees an OpenAI base URL.
"""
