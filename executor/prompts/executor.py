"""The executor's system prompt (the four retrieval rules) and the answer prompt, in Chinese and English.

The graph enforces the same rules in code; the prompt is there so that a good
model does not even try, and so that an incomplete answer feels allowed.
"""

from __future__ import annotations

from executor.prompts.framing import QUOTED_RULE

# A prompt line is one paragraph as the model reads it: wrapping it would change the prompt, hence the noqa.
SYSTEM = {
    "zh": """你是团队知识库的问答执行者。需要外部信息时调用工具，但必须遵守下面的检索约束。

可用工具：
{{tools}}

{{kbs}}

检索约束：
1. 判断重复：调用前先回顾本会话已经检索过的问题（任何一轮）。新的检索如果和其中某次检索语义重叠（换说法、换关键词、问得更宽或更窄），就是重复检索；同一领域里的不同问题不算重复。retrieved_domains_this_session 列出已检索过的领域，供参考。
2. 重复了怎么办：禁止换关键词、换说法重新检索同一件事。先指出现有结果缺少的具体维度，再只针对这个维度补充检索，并把它写进 missing_dimension。
3. 合法出口：回答不完整不会被追责，重复检索才会被惩罚。信息不全时，基于已有结果回答并说明缺什么。
4. 利用质量信号：PRECISE → 立即停止检索并回答；HIGHLY_RELEVANT → 不要换说法再查同一件事；REFERENCE → 先说明缺少的维度，再定向补充（带 missing_dimension）。DEDUPED 表示这次检索被拦截（dedup_reason 说明原因），请直接基于已有信息回答；知识库没有的内容，换说法也查不到。

问题包含几个不同的部分时，在同一条消息里为每个部分各发起一次检索。PRECISE 之后本轮不会再执行检索。
知识库里没有相关内容时，直接说明知识库没有这方面的信息，不要编造。
回答时用 [doc_key] 标注引用的文档。
{quoted_rule}""".format(quoted_rule=QUOTED_RULE["zh"]),  # noqa: E501 (one line a paragraph)
    "en": """You answer questions from the team's knowledge bases. Call tools when you need outside information, but follow the retrieval rules below.

Tools:
{{tools}}

{{kbs}}

Retrieval rules:
1. Judge repeats: before a call, recall what this session already looked up, in any turn. A lookup that overlaps one of those in meaning (a rephrasing, other keywords, a wider or narrower wording) is a repeat; a different question in the same domain is not. retrieved_domains_this_session lists the domains retrieved so far, for reference.
2. What to do instead of repeating: never rephrase or swap keywords to search the same thing again. Name the specific dimension the results lack, and look up only that, passing it as missing_dimension.
3. The legitimate way out: an incomplete answer is never punished; a repeated lookup is. When information is missing, answer from what you have and say what is missing.
4. Act on the quality signal: PRECISE → stop searching and answer; HIGHLY_RELEVANT → do not rephrase and search the same thing again; REFERENCE → name the missing dimension, then make one targeted lookup with missing_dimension. DEDUPED means the lookup was blocked (dedup_reason says why): answer from what you have; what the knowledge base lacks, no rephrasing will find.

When a question has several distinct parts, look them all up in one message, one lookup per part: after a PRECISE result no further lookup runs this turn.
If the knowledge base has nothing on the question, say so plainly; do not make anything up.
Cite the documents you use as [doc_key].
{quoted_rule}""".format(quoted_rule=QUOTED_RULE["en"]),  # noqa: E501 (one line a paragraph)
}

KNOWLEDGE_BASES = {
    "zh": "本次可用的知识库（lookup_knowledge 和 navigate_graph 检索 {default}）：\n{lines}",
    "en": "Knowledge bases available this run (lookup_knowledge and navigate_graph search {default}):\n{lines}",
}

# the four retrieval rules alone, for an MCP host's LLM (the server serves them as a prompt and a resource);
# its tool results frame documents the same way, so the quoted-material rule goes with them
RULES = {
    lang: text[text.index(start) :].split("\n\n")[0] + "\n" + QUOTED_RULE[lang]
    for lang, text, start in (("zh", SYSTEM["zh"], "检索约束："), ("en", SYSTEM["en"], "Retrieval rules:"))
}


def system_prompt(lang: str, tools: list[str], kbs: list[str], default_kb: str) -> str:
    """The executor's system prompt: the tool list and the knowledge bases come from the registry and the catalog."""
    lang = "zh" if lang == "zh" else "en"
    kb_text = KNOWLEDGE_BASES[lang].format(default=default_kb, lines="\n".join(f"- {k}" for k in kbs) or "-")
    return SYSTEM[lang].format(tools="\n".join(f"- {t}" for t in tools), kbs=kb_text)


ANSWER = {
    "zh": """根据下面检索到的资料回答用户的问题。只使用资料中的信息；每个要点后用 [doc_key] 标注来源。
资料不足以完整回答时，回答能回答的部分，并明确说明缺少什么。资料为空时，说明知识库中没有这方面的内容。
{quoted_rule}""".format(quoted_rule=QUOTED_RULE["zh"]),  # noqa: E501 (one line a paragraph)
    "en": """Answer the user's question from the material below. Use only what the material says, and cite each point as [doc_key].
If the material does not cover everything, answer what it covers and say plainly what is missing. If there is no material, say the knowledge base has nothing on this.
{quoted_rule}""".format(quoted_rule=QUOTED_RULE["en"]),  # noqa: E501 (one line a paragraph)
}

BLOCKED = {
    "precise_reached": {
        "zh": "已拦截：本轮已得到 PRECISE 结果，不再检索。请直接基于已有结果回答。",
        "en": "Blocked: this turn already has a PRECISE result, so no more lookups run. Answer from it.",
    },
    "budget_spent": {
        "zh": "已拦截：本轮检索次数已用完。请基于已有结果回答，并说明缺少的信息。",
        "en": "Blocked: this turn's lookup budget is spent. Answer from what you have and say what is missing.",
    },
    "invalid_arguments": {
        "zh": "参数错误：{detail}",
        "en": "Invalid arguments: {detail}",
    },
    "unknown_tool": {
        "zh": "没有名为 {detail} 的工具。",
        "en": "There is no tool named {detail}.",
    },
}

OFFLINE_NOTE = {
    "zh": "（离线模式：未配置 LLM，以下内容直接摘自知识库文档。）",
    "en": "(Offline mode: no LLM is configured; the text below is quoted from the knowledge base.)",
}

OFFLINE_SHORT = {
    "zh": "（离线模式：未配置 LLM。）",
    "en": "(Offline mode: no LLM is configured.)",
}

NOTHING_FOUND = {
    "zh": "知识库中没有找到与这个问题相关的内容。",
    "en": "The knowledge base has nothing on this question.",
}

# a run whose last user message holds no text (no messages, a blank one, an image only): nothing was searched,
# so the answer must not say the knowledge base lacks anything; the language is unknown, so both are said
NO_QUESTION = "No question was asked: send a question in text. / 没有收到问题：请用文字提问。"

# content blocks that are not text (images, files, audio) are not searched: the answer says so
UNREAD_BLOCKS = {
    "zh": "（问题附带的{kinds}未被读取：只检索文字。）",
    "en": "(The {kinds} attached to the question {verb} not read: only its text is searched.)",
}


def unread_note(kinds: list[str], lang: str) -> str:
    names = ", ".join(dict.fromkeys(kinds))
    if lang == "zh":
        return UNREAD_BLOCKS["zh"].format(kinds=names)
    return UNREAD_BLOCKS["en"].format(
        kinds=f"{names} block" + ("s" if len(kinds) > 1 else ""), verb="were" if len(kinds) > 1 else "was"
    )


def blocked_message(reason: str, lang: str, detail: str = "") -> str:
    return BLOCKED[reason]["zh" if lang == "zh" else "en"].format(detail=detail)


# A call of a round that did not advance the turn (executor/nodes/settle.py): not run; the graph answers instead.
NOT_RUN = {
    "repeated_call": {
        "zh": "未执行：本轮已调用过同样的工具和参数，结果见上文。将根据已检索到的资料作答。",
        "en": "Not run: this turn already made the same call, its result is above. The answer is written from "
        "what was retrieved.",
    },
    "idle_round": {
        "zh": "未执行：本轮还没有检索知识库。将用问题本身检索，并据此作答。",
        "en": "Not run: this turn has not searched the knowledge base yet. The question itself is looked up and "
        "answered from.",
    },
}


def not_run_message(reason: str, lang: str) -> str:
    return NOT_RUN[reason]["zh" if lang == "zh" else "en"]


# A lookup whose store or configuration failed: the LLM must not read it as "the knowledge base has nothing".
UNAVAILABLE = {
    "zh": "错误：知识库暂时不可用（{error}）。这不是检索结果，不能据此断定知识库中没有相关内容。",
    "en": "error: the knowledge base is unavailable ({error}). This is not a search result: do not conclude "
    "that the knowledge base lacks the answer.",
}


def unavailable_message(lang: str, error: str) -> str:
    return UNAVAILABLE["zh" if lang == "zh" else "en"].format(error=error)
