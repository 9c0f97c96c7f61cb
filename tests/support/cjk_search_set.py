# ruff: noqa: RUF001  (full-width letters and CJK punctuation are the point)
"""A search test set in the seeds' users' languages: Chinese, Japanese and Korean messages
mixed with Latin text, and queries (words of two to six characters, one single character,
full-width and superscript forms) with the messages each must find — no more, no fewer."""

from __future__ import annotations

from dataclasses import dataclass

from harnessed.log.search import MatchMode

MESSAGES: dict[str, str] = {
    "zh1": "昨天的数据库迁移失败了，请检查 PostgreSQL 日志。",
    "zh2": "我们决定下周一再迁移，先备份 users 表。",
    "zh3": "性能测试：API 响应时间从 300ms 降到 120ms。",
    "zh4": "会议纪要：讨论了缓存策略和 Redis 集群的扩容方案。",
    "ja1": "データベースの移行は金曜日に完了しました。",
    "ja2": "東京オフィスで新しいサーバーを設定する予定です。",
    "ja3": "バグ修正のプルリクエストを GitHub に送りました。",
    "ko1": "데이터베이스 마이그레이션이 실패했습니다. 로그를 확인하세요.",
    "ko2": "다음 주에 서버를 업그레이드할 예정입니다.",
    "ko3": "회의에서 캐시 전략을 논의했습니다 (Redis 사용).",
    "mix": "the x²y formula, ｆｕｌｌｗｉｄｔｈ text and ﾃﾞｰﾀ in half-width kana",
    "en": "The migration of the billing service is done.",
}


@dataclass(frozen=True, slots=True)
class Case:
    query: str
    expected: frozenset[str]
    match: MatchMode = "phrase"


def case(query: str, *expected: str, match: MatchMode = "phrase") -> Case:
    return Case(query, frozenset(expected), match)


CASES: tuple[Case, ...] = (
    # Chinese: the seed's own example, its two-character word, 2- to 6-character words
    case("数据库迁移", "zh1"),
    case("迁移", "zh1", "zh2"),
    case("数据库", "zh1"),
    case("备份", "zh2"),
    case("响应时间", "zh3"),
    case("性能测试", "zh3"),
    case("迁移失败了", "zh1"),
    case("讨论了缓存策略", "zh4"),
    case("PostgreSQL 日志", "zh1"),
    case("Redis 集群", "zh4"),
    case("API 响应", "zh3"),
    case("移", "zh1", "zh2", "ja1"),  # one character: every word that has it
    case("迁移成功"),
    case("数据库 日志", "zh1", match="all"),
    case("备份 缓存", "zh2", "zh4", match="any"),
    # Japanese: katakana, kanji, mixed with Latin
    case("データベース", "ja1"),
    case("移行", "ja1"),
    case("金曜日", "ja1"),
    case("東京", "ja2"),
    case("サーバー", "ja2"),
    case("設定する", "ja2"),
    case("バグ修正", "ja3"),
    case("GitHub に送り", "ja3"),
    case("データ", "ja1", "mix"),  # half-width ﾃﾞｰﾀ is データ after NFKC
    case("東京サーバー"),
    # Korean: words with particles attached
    case("데이터베이스", "ko1"),
    case("마이그레이션", "ko1"),
    case("로그", "ko1"),
    case("서버", "ko2"),
    case("업그레이드", "ko2"),
    case("캐시 전략", "ko3"),
    case("논의", "ko3"),
    case("데이터베이스 실패"),
    case("실패 로그", "ko1", match="all"),
    # Latin untouched, NFKC folding
    case("Redis", "zh4", "ko3"),
    case("x2y", "mix"),
    case("x²y", "mix"),
    case("fullwidth", "mix"),
    case("MIGRATION", "en"),
    case("users", "zh2"),
    case("300ms", "zh3"),
)
