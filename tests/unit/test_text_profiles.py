"""A candidate's terms and language assembled from its pieces' profiles equal those of its joined text."""

from __future__ import annotations

import random

import pytest

from executor.retrieval.ranking import joined_profile as profile_of
from executor.retrieval.text_profiles import Piece, TextProfiles, assemble

# edge cases of `normalize` at a newline: CJK on both sides (joined), one side only, compatibility ideographs
# (CJK_RUN counts them, the space removal does not), whitespace-only pieces, full-width letters, combining marks
PARTS = [
    "数据库",
    "连接池",
    "配置",
    "  ",
    "",
    "\u3000",
    "abc",
    "中文 \n",
    " 文档",
    "ＡＢＣ中",
    "\uf900\uf901",
    "豈",
    "。",
    "x-",
    "-y",
    "\u200b",
    "ΑΣ",
    "e\u0301",
    "\u0301中",
    "ERR_TIMEOUT 请求超时",
    "hook-delete-policy",
    "回滚",
]


def test_assembled_profile_is_the_joined_texts_profile():
    rng = random.Random(7)
    for _ in range(2000):
        texts = ["".join(rng.choice(PARTS) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 5))]
        assert assemble([Piece.of(t) for t in texts], {}) == profile_of(texts), texts


@pytest.fixture
def kb_rows():
    return [
        ("rollback.md#0", "rollback.md", "发布回滚流程", "发布回滚流程\n回滚前先确认版本号"),
        ("rollback.md#1", "rollback.md", "发布回滚流程", "发布回滚流程 › 步骤\n执行 helm rollback 命令"),
        (
            "timeout.md#0",
            "timeout.md",
            "ERR_TIMEOUT 请求超时",
            "ERR_TIMEOUT 请求超时\n`ERR_TIMEOUT` means the request timed out.",
        ),
    ]


def test_saved_profiles_answer_without_segmenting(tmp_path, kb_rows, monkeypatch):
    path = tmp_path / "profiles-kb.sqlite"
    TextProfiles.build(path, "3@2026-01-01T00:00:00", kb_rows)
    assert TextProfiles.load(path, "4@2026-01-01T00:00:00") is None  # another revision: rebuilt
    assert TextProfiles.load(path, "3@2026-02-01T00:00:00") is None  # dropped and re-created: rebuilt
    profiles = TextProfiles.load(path, "3@2026-01-01T00:00:00")
    candidates = [
        ["发布回滚流程", kb_rows[1][3], kb_rows[0][3]],
        ["发布回滚流程", kb_rows[0][3]],
        ["ERR_TIMEOUT 请求超时", kb_rows[2][3]],
    ]
    expected = [profile_of(texts) for texts in candidates]

    import executor.retrieval.text_profiles as module

    def no_jieba(run):
        raise AssertionError(f"segmented {run!r}")

    monkeypatch.setattr(module, "cjk_words", no_jieba)
    assert [profiles.profile(texts) for texts in candidates] == expected


def test_a_text_the_profiles_do_not_hold_is_profiled_from_itself(tmp_path, kb_rows):
    path = tmp_path / "profiles-kb.sqlite"
    TextProfiles.build(path, "1@", kb_rows)
    profiles = TextProfiles.load(path, "1@")
    texts = ["新标题", "新的内容，不在知识库里", "另一段"]
    assert profiles.profile(texts) == profile_of(texts)
    assert TextProfiles(path).profile(texts) == profile_of(texts)  # no file at all: the same
