"""Completeness hints: the one sentence per level that tells the LLM whether to keep looking."""

from __future__ import annotations

HINTS: dict[str, dict[str, str]] = {
    "PRECISE": {
        "zh": "知识库中不存在比上述结果更精准的文档，请直接使用，不要再检索。",
        "en": "The knowledge base holds nothing more precise than this result: use it and do not search again.",
    },
    "HIGHLY_RELEVANT": {
        "zh": "当前结果已高度相关，继续检索不太可能找到更精准的文档。",
        "en": "These results are highly relevant; searching again is unlikely to find anything more precise.",
    },
    "REFERENCE": {
        "zh": "当前结果为相关参考，如需更精准信息，请先明确缺少的具体维度，再定向补充。",
        "en": "These results are related references; if you need more, name the specific missing dimension "
        "and look up only that.",
    },
    "weak_reference": {
        "zh": "当前结果只是较弱的参考：知识库可能没有直接回答这个问题。先核对它是否回答了问题；"
        "若没有，请明确缺少的具体维度"
        "再定向检索一次，仍找不到就如实告诉用户知识库没有覆盖。",
        "en": "This result is only a weak reference: the knowledge base may not answer the question directly. Check "
        "whether it does; if not, name the specific missing dimension and look that up once, and if that finds "
        "nothing, tell the user the knowledge base does not cover it.",
    },
    "weak_reference_missing": {
        "zh": "当前结果只是较弱的参考：最相关的页面没有提到“{missing}”，知识库可能没有直接回答这个问题。"
        "先核对它是否回答了问题；若没有，请就缺少的这一维度再定向检索一次，仍找不到就如实告诉用户知识库没有覆盖。",
        "en": 'This result is only a weak reference: the best page found never mentions "{missing}", so the '
        "knowledge base may not answer the question directly. Check whether it does; if not, look up that missing "
        "dimension once, and if that finds nothing, tell the user the knowledge base does not cover it.",
    },
    "doc_retrieved": {
        "zh": "找到的文档在本会话中都已返回过，请基于已有信息回答。",
        "en": "Every document found was already returned in this session: answer from what you have.",
    },
    "answered_from_session": {
        "zh": "这个问题的最佳文档本会话已经有了：{pages}。知识库里其余的结果明显不如它相关，不再发送。"
        "请基于这些已有文档回答。",
        "en": "The best page for this is one this session already has: {pages}. Everything else the knowledge base "
        "found is clearly less relevant, so nothing new is sent. Answer from those pages.",
    },
    "query_repeated": {
        "zh": "这次检索与本会话之前的检索“{earlier}”语义重复；那次结果为 {level}，文档（{pages}）已返回过，"
        "内容不再重复发送。请基于已有信息回答。",
        "en": 'This lookup repeats the earlier lookup "{earlier}" of this session, whose result was {level}; its '
        "documents ({pages}) were already returned and are not sent again. Answer from what you have.",
    },
    "query_repeated_blocked": {
        "zh": "这次检索与本会话之前的检索“{earlier}”语义重复；那次已经由本会话已有的文档（{pages}）回答，"
        "内容不再重复发送。请基于这些文档回答。",
        "en": 'This lookup repeats the earlier lookup "{earlier}" of this session, which was itself answered from '
        "pages the session already has ({pages}); nothing is sent again. Answer from those pages.",
    },
    "query_repeated_reference": {
        "zh": "这次检索与本会话之前的检索“{earlier}”语义重复；那次结果只是相关参考（REFERENCE），文档已返回过。"
        "请基于已有信息回答（{pages}）；如确有缺失，请在 missing_dimension 中写明缺少的具体维度，再定向补充。",
        "en": 'This lookup repeats the earlier lookup "{earlier}" of this session, whose result was only a related '
        "reference (REFERENCE); its documents ({pages}) were already returned. Answer from what you have, or name the "
        "specific missing dimension in missing_dimension for one targeted lookup.",
    },
    "not_found_repeated": {
        "zh": "知识库中没有这方面的内容：本会话已经检索过“{earlier}”，什么也没找到，换个说法也找不到。"
        "请如实说明知识库没有相关信息。",
        "en": 'The knowledge base has nothing on this: the earlier lookup "{earlier}" of this session found '
        "nothing, and rephrasing it will not find anything either. Say so in the answer.",
    },
    "not_found": {
        "zh": "知识库中没有与该问题相关的文档；不要换说法重查，请如实说明知识库没有这方面的内容。",
        "en": "The knowledge base has nothing relevant to this; do not rephrase and retry, say so in the answer.",
    },
    "not_mentioned": {
        "zh": "知识库中没有相关文档，也从未提到 {names}；不要换说法重查，请如实说明知识库没有这方面的内容。",
        "en": "The knowledge base has nothing relevant to this and never mentions {names}; do not rephrase and "
        "retry, say so in the answer.",
    },
}

ALREADY_RETURNED = {
    "zh": "（本会话已返回过，内容不再重复发送）",
    "en": "(already returned earlier in this session; content not sent again)",
}


def hint(key: str, lang: str, **values: str) -> str:
    text = HINTS[key]["zh" if lang == "zh" else "en"]
    return text.format(**values) if values else text
