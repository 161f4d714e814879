"""`message`: the one-line human summary on a lookup result (seed 000's LookupResult.message), zh + en."""

from __future__ import annotations

LEVEL_NAMES = {
    "PRECISE": {"zh": "精确命中", "en": "Precise match"},
    "HIGHLY_RELEVANT": {"zh": "高度相关", "en": "Highly relevant"},
    "REFERENCE": {"zh": "相关参考", "en": "Related references"},
}


def lookup_message(
    level: str | None, dedup_reason: str | None, titles: list[str], fresh: int, domain: str | None, lang: str
) -> str:
    """E.g. 'Precise match: "MySQL 数据库连接池配置" (infrastructure), plus 2 more documents.'"""
    zh = lang == "zh"
    if level is None:
        return "知识库中没有找到相关文档。" if zh else "Nothing relevant in the knowledge base."
    if dedup_reason == "domain_retrieved":
        return (
            f"领域 {domain} 本会话已回答过，未再发送文档。"
            if zh
            else f"The {domain} domain was already answered this session; nothing sent again."
        )
    if dedup_reason == "answered_from_session":
        return (
            f"最相关的文档本会话已返回过：《{titles[0]}》；其余结果明显不如它相关，未发送。"
            if zh
            else f'The best document, "{titles[0]}", was already returned this session; nothing as relevant to send.'
        )
    if dedup_reason:
        return (
            f"找到的 {len(titles)} 篇文档本会话都已返回过。"
            if zh
            else f"All {len(titles)} documents found were already returned this session."
        )
    name = LEVEL_NAMES.get(level, {"zh": level, "en": level})["zh" if zh else "en"]
    more = fresh - 1
    if zh:
        return f"{name}：《{titles[0]}》（{domain}）" + (f"，另有 {more} 篇补充文档。" if more > 0 else "。")
    return f'{name}: "{titles[0]}" ({domain})' + (
        f", plus {more} more document{'s' if more > 1 else ''}." if more > 0 else "."
    )
