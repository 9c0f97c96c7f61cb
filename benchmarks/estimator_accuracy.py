"""How close is the approximate token estimator to o200k_base, and how fast is it?

Run ``python benchmarks/estimator_accuracy.py`` (the ``tiktoken`` extra must be installed). The
script builds about 1 MB of text in eight categories that agents typically see (prose, source
code, JSON tool output, logs, Chinese, mixed Chinese/English, Markdown), counts each with
tiktoken's o200k_base, with a flat ``chars / 4`` and with :class:`ApproxTokenEstimator`, and
prints the signed error of both estimates plus the throughput of the estimator and of tiktoken.

The corpora are synthetic but built from realistic parts and a fixed seed, so every run (and
the test suite, which imports :func:`generate` from here) sees exactly the same text.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

# --------------------------------------------------------------------------- vocabularies


def _words(text: str) -> list[str]:
    return text.split()


_EN_COMMON = _words(
    """
the of and to a in is that for it as with was on be by this are or from at an not have
but which they you we their has been one all were can there more will if would so what
about when also its out into only other than them some time two these new may then do any
first could our like over such make just most how where after should very because through
each well between those both being here under while same without again still during before
I he she his her had said up no my me who him your did get go see use way day man now know
take year good give back even want look think work part life place case point fact group
"""
)

_EN_CONTENT = _words(
    """
system request response model context budget token message history summary agent tool
result file directory workspace memory session user assistant error warning failure retry
timeout process thread worker queue schedule task project repository branch commit change
review test suite coverage report metric latency throughput benchmark performance estimate
approximate exact count limit window output input stream event handler callback function
method class module package library dependency version release update configuration
setting option parameter argument value default variable constant string number integer
boolean object array list dictionary mapping record field column table database index
query transaction migration schema server client network connection socket address port
protocol header payload status code document paragraph sentence language translation
character encoding decoder parser compiler interpreter runtime environment container image
cluster node instance deployment pipeline artifact storage bucket cache eviction policy
compaction truncation preview notice marker reference instruction priority placement
approval permission security credential secret identity account organization customer
invoice payment order product price discount shipment warehouse inventory supplier contract
analysis decision finding evidence hypothesis experiment observation measurement accuracy
precision recall baseline regression improvement degradation incident outage mitigation
investigation postmortem timeline owner deadline milestone roadmap proposal specification
implementation interface abstraction boundary invariant assumption constraint requirement
behaviour behavior consistency idempotent deterministic concurrent asynchronous synchronous
serialization deserialization validation normalization authentication authorization
observability instrumentation telemetry dashboard alert threshold anomaly distribution
frequency probability variance correlation coefficient gradient optimizer learning rate
people company government country city morning evening weather river mountain village
teacher student doctor patient family friend neighbour history economy market industry
"""
)

_EN_ADJ = _words(
    """
large small quick slow careful brief detailed simple complex reliable fragile robust
expensive cheap recent previous current final initial optional required stable unstable
visible hidden local remote internal external careful thorough partial complete empty full
important significant minor major obvious subtle surprising unexpected consistent strange
"""
)

_EN_VERB = _words(
    """
reads writes sends receives builds checks validates returns raises handles stores loads
computes estimates counts drops keeps moves replaces merges splits compares measures records
explains describes suggests requires allows prevents ensures improves reduces increases
found noticed reported fixed changed removed added replaced reviewed tested deployed shipped
"""
)

_EN_RARE = _words(
    """
idiosyncratic heteroscedasticity quasi-stationary photosynthesis antidisestablishment
Kubernetes PostgreSQL Zanzibar Ouagadougou Llewellyn Bartholomew Schwarzenegger Tchaikovsky
electroencephalography cryptocurrency unparalleled counterintuitive multidimensional
serendipitous juxtaposition onomatopoeia ubiquitous sesquipedalian perfunctory obfuscation
"""
)

_NAMES = _words(
    """
Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil
Trent Victor Walter Yusuf Zhang Priya Mateo Sofia Lukas Amara Kenji Fatima
"""
)

_ZH_WORDS = _words(
    """
我们 你们 他们 这个 那个 一个 没有 可以 因为 所以 但是 如果 已经 还是 就是 这样 什么 时候
问题 系统 模型 上下文 预算 消息 历史 摘要 代理 工具 结果 文件 目录 工作区 记忆 会话 用户
助手 错误 警告 失败 重试 超时 进程 线程 任务 项目 仓库 分支 提交 修改 审查 测试 覆盖率
报告 指标 延迟 吞吐量 性能 估计 近似 精确 计数 限制 窗口 输出 输入 事件 函数 方法 模块
依赖 版本 发布 更新 配置 设置 参数 默认 变量 字符串 数字 整数 对象 数组 列表 字典 记录
字段 数据库 索引 查询 事务 迁移 服务器 客户端 网络 连接 地址 端口 协议 状态 文档 段落
句子 语言 翻译 字符 编码 解析 编译器 运行时 环境 容器 镜像 集群 节点 实例 部署 流水线
存储 缓存 策略 压缩 截断 预览 标记 引用 指令 优先级 权限 安全 凭证 账户 组织 客户 订单
产品 价格 分析 决定 发现 证据 实验 观察 测量 准确 基线 改进 事故 调查 负责人 截止日期
里程碑 路线图 方案 规范 实现 接口 抽象 边界 假设 约束 需求 一致性 并发 异步 同步 验证
认证 授权 监控 仪表盘 告警 阈值 异常 分布 频率 概率 方差 梯度 学习率 公司 政府 国家
城市 早上 晚上 天气 河流 山区 村庄 老师 学生 医生 病人 家庭 朋友 邻居 经济 市场 行业
重要 简单 复杂 可靠 稳定 最近 之前 当前 最终 初始 完整 明显 意外 详细 快速 缓慢 仔细
读取 写入 发送 接收 构建 检查 返回 处理 保存 加载 计算 估算 丢弃 保留 移动 替换 合并
拆分 比较 解释 描述 建议 需要 允许 防止 确保 提高 减少 增加 注意到 修复 删除 添加 部署
今天 明天 昨天 现在 以后 以前 非常 比较 特别 大约 几乎 只是 仍然 终于 马上 同时 另外
例如 比如 而且 或者 虽然 然而 因此 于是 总之 首先 其次 最后 一般 通常 经常 偶尔 从来
研究 发展 社会 文化 历史 教育 科学 技术 生活 工作 学习 时间 地方 方面 情况 过程 结构
"""
)

_ZH_FUNCTION = _words("的 了 在 是 和 与 对 把 被 从 向 到 让 给 也 都 就 又 还 很 不 会 要 能")
_ZH_PUNCT_MID = ["，", "，", "，", "、", "；", "："]  # noqa: RUF001
_ZH_PUNCT_END = ["。", "。", "。", "？", "！"]  # noqa: RUF001

_EN_TECH = _words(
    """
API JSON YAML Python Rust Docker Kubernetes GitHub PyPI HTTP TCP SQL Redis Kafka OpenAI
tokenizer timeout retry cache commit pull request pytest mypy ruff CI CD GPU CPU LLM token
"""
)

_IDENT_PARTS = _words(
    """
get set load save read write build make parse format render fetch send recv check validate
count estimate token message history budget context window limit result tool call user
item items node nodes path file dir name key value data config options state store cache
index offset size length total max min start end first last next prev id ids text raw
buffer chunk batch queue task job worker event handler request response session agent
"""
)

_FILE_EXTS = ["py", "json", "md", "txt", "yaml", "toml", "log", "csv", "rs", "ts"]
_HTTP_PATHS = ["api/v1/items", "api/v2/users", "search", "repos", "issues", "static/js", "health"]


def _zipf_choice(rng: random.Random, words: list[str], skew: float = 1.1) -> str:
    """Pick a word, favouring the front of the list (a rough Zipf law)."""
    n = len(words)
    idx = int(n * (rng.random() ** (1 + skew))) % n
    return words[idx]


def _en_word(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return _zipf_choice(rng, _EN_COMMON)
    if r < 0.77:
        word = rng.choice(_EN_CONTENT)
        return word + "s" if rng.random() < 0.3 else word
    if r < 0.85:
        return rng.choice(_EN_ADJ)
    if r < 0.94:
        return rng.choice(_EN_VERB)
    if r < 0.975:
        return rng.choice(_NAMES)
    if r < 0.985:
        return rng.choice(["it's", "don't", "we'll", "isn't", "they're", "can't", "you've"])
    return rng.choice(_EN_RARE)


def _en_sentence(rng: random.Random) -> str:
    words = [_en_word(rng) for _ in range(rng.randint(6, 26))]
    for i in range(2, len(words) - 2):
        r = rng.random()
        if r < 0.06:
            words[i] += ","
        elif r < 0.075:
            words[i] = str(rng.choice([rng.randint(2, 99), rng.randint(1990, 2030)]))
        elif r < 0.085:
            words[i] = f"({words[i]})"
        elif r < 0.09:
            words[i] = f'"{words[i]}"'
        elif r < 0.095:
            words[i] = f"{rng.randint(1, 99)}%"
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words) + rng.choice([".", ".", ".", ".", "?", "!", ":"])


def _en_paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 7)) -> str:
    return " ".join(_en_sentence(rng) for _ in range(rng.randint(*sentences)))


def gen_english(rng: random.Random) -> str:
    """One paragraph of English prose."""
    return _en_paragraph(rng) + "\n\n"


def _snake(rng: random.Random, parts: tuple[int, int] = (1, 3)) -> str:
    return "_".join(rng.choice(_IDENT_PARTS) for _ in range(rng.randint(*parts)))


def _camel(rng: random.Random) -> str:
    return "".join(rng.choice(_IDENT_PARTS).capitalize() for _ in range(rng.randint(1, 3)))


def _py_expr(rng: random.Random) -> str:
    r = rng.random()
    a, b = _snake(rng), _snake(rng)
    if r < 0.2:
        return f"self.{a}({b}, {rng.randint(0, 4096)})"
    if r < 0.35:
        return f'f"{{{a}}}: {_en_word(rng)} {{{b}!r}}"'
    if r < 0.5:
        return f"[{a} for {a} in {b} if {a} is not None]"
    if r < 0.6:
        return f'{a}.get("{b}", {rng.choice(["None", "0", "[]", "{}", "False"])})'
    if r < 0.7:
        return f"len({a}) + {rng.randint(1, 64)} * {b}"
    if r < 0.8:
        return f"{_camel(rng)}({a}={b}, {_snake(rng)}={rng.random():.3f})"
    if r < 0.9:
        return f"await self._{a}.{b}()"
    return f'"{_en_word(rng)} {_en_word(rng)}"'


def _py_block(rng: random.Random, indent: int, depth: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for _ in range(rng.randint(2, 6)):
        r = rng.random()
        if r < 0.4:
            lines.append(f"{pad}{_snake(rng)} = {_py_expr(rng)}")
        elif r < 0.5:
            lines.append(f"{pad}# {_en_sentence(rng)}")
        elif r < 0.65 and depth < 3:
            head = rng.choice(
                [
                    f"if {_snake(rng)} is None:",
                    f"for {_snake(rng, (1, 1))} in {_snake(rng)}:",
                    f"while {_snake(rng)} < {rng.randint(1, 100)}:",
                    f'with open({_snake(rng)}, encoding="utf-8") as {_snake(rng, (1, 1))}:',
                    "try:",
                ]
            )
            lines.append(pad + head)
            lines.extend(_py_block(rng, indent + 4, depth + 1))
            if head == "try:":
                lines.append(f"{pad}except {_camel(rng)}Error as exc:")
                lines.append(f'{pad}    raise ValueError(f"{_en_sentence(rng)} {{exc}}") from exc')
        elif r < 0.75:
            lines.append(f"{pad}self.{_snake(rng)}.append({_py_expr(rng)})")
        else:
            lines.append(f"{pad}return {_py_expr(rng)}")
    return lines


def gen_python(rng: random.Random) -> str:
    """One Python class or function with docstrings, comments and nested blocks."""
    lines: list[str] = []
    if rng.random() < 0.15:
        lines.append(f"from {_snake(rng, (1, 2))}.{_snake(rng, (1, 1))} import {_camel(rng)}")
        lines.append(f"import {_snake(rng, (1, 1))}")
        lines.append("")
    if rng.random() < 0.5:
        lines.append(f"class {_camel(rng)}({rng.choice(['Protocol', 'BaseModel', 'object'])}):")
        lines.append(f'    """{_en_sentence(rng)}"""')
        lines.append("")
        for _ in range(rng.randint(1, 3)):
            args = ", ".join(
                f"{_snake(rng)}: {rng.choice(['int', 'str', 'bool'])}" for _ in range(2)
            )
            lines.append(f"    def {_snake(rng)}(self, {args}) -> {_camel(rng)}:")
            lines.append(f'        """{_en_sentence(rng)}"""')
            lines.extend(_py_block(rng, 8, 1))
            lines.append("")
    else:
        if rng.random() < 0.3:
            lines.append(f"@{rng.choice(['dataclass', 'lru_cache(maxsize=128)', 'property'])}")
        args = ", ".join(f"{_snake(rng)}: list[{rng.choice(['int', 'str'])}]" for _ in range(2))
        prefix = rng.choice(["def", "async def"])
        lines.append(f"{prefix} {_snake(rng)}({args}) -> dict[str, Any]:")
        lines.append(f'    """{_en_sentence(rng)}')
        lines.append("")
        lines.append(f"    {_en_sentence(rng)}")
        lines.append('    """')
        lines.extend(_py_block(rng, 4, 1))
    return "\n".join(lines) + "\n\n\n"


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _timestamp(rng: random.Random) -> str:
    return (
        f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


def _url(rng: random.Random) -> str:
    host = rng.choice(["api.github.com", "example.com", "docs.python.org", "internal.acme.io"])
    return (
        f"https://{host}/{rng.choice(_HTTP_PATHS)}/{rng.randint(1, 99999)}?page={rng.randint(1, 9)}"
    )


def _path(rng: random.Random) -> str:
    dirs = "/".join(_snake(rng, (1, 1)) for _ in range(rng.randint(1, 4)))
    return f"src/{dirs}/{_snake(rng)}.{rng.choice(_FILE_EXTS)}"


def _json_record(rng: random.Random) -> dict[str, object]:
    record: dict[str, object] = {
        "id": rng.randint(10_000, 9_999_999_999),
        "node_id": "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(20)),
        "uuid": f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}",
        "title": _en_sentence(rng)[: rng.randint(20, 90)],
        "url": _url(rng),
        "state": rng.choice(["open", "closed", "merged", "pending"]),
        "created_at": _timestamp(rng),
        "score": round(rng.random() * 100, rng.randint(1, 6)),
        "sha": _hex(rng, 40),
        "path": _path(rng),
        "size": rng.randint(0, 2_000_000),
        "draft": rng.random() < 0.3,
        "assignee": None
        if rng.random() < 0.4
        else {"login": rng.choice(_NAMES).lower(), "id": rng.randint(1, 10**8)},
        "labels": [
            rng.choice(["bug", "enhancement", "needs-triage", "p1", "good first issue"])
            for _ in range(rng.randint(0, 3))
        ],
        "metrics": {k: rng.randint(0, 10_000) for k in rng.sample(_IDENT_PARTS, rng.randint(1, 4))},
    }
    if rng.random() < 0.4:
        record["body"] = _en_paragraph(rng, (1, 3))
    if rng.random() < 0.08:
        # File contents as the GitHub contents API returns them: base64.
        blob = bytes(rng.randrange(256) for _ in range(rng.randint(30, 600)))
        record["content"] = base64.b64encode(blob).decode("ascii")
        record["encoding"] = "base64"
    keys = list(record)
    rng.shuffle(keys)
    chosen = {k: record[k] for k in keys[: rng.randint(6, len(keys))]}
    if rng.random() < 0.5:
        # Many APIs (and schemas) use camelCase keys: rename every key of this record.
        chosen = {_camel_key(k): v for k, v in chosen.items()}
    return chosen


def _camel_key(key: str) -> str:
    """``created_at`` -> ``createdAtValue``: camelCase with a qualifier, as in real schemas."""
    head, *rest = key.split("_")
    suffix = ("Identifier", "Value", "Config", "Properties", "")[len(key) % 5]
    return head + "".join(part.capitalize() for part in rest) + suffix


def gen_json_pretty(rng: random.Random) -> str:
    """A pretty-printed (indent 2) JSON tool result: a page of API records."""
    page = {
        "total_count": rng.randint(1, 5000),
        "items": [_json_record(rng) for _ in range(rng.randint(1, 4))],
    }
    return json.dumps(page, indent=2) + "\n"


def gen_json_compact(rng: random.Random) -> str:
    """A compact JSON tool result (no spaces), as many APIs return it."""
    page = {
        "total_count": rng.randint(1, 5000),
        "items": [_json_record(rng) for _ in range(rng.randint(1, 4))],
    }
    return json.dumps(page, separators=(",", ":")) + "\n"


def _log_line(rng: random.Random) -> str:
    r = rng.random()
    ts = _timestamp(rng).replace("T", " ").rstrip("Z") + f",{rng.randint(0, 999):03d}"
    if r < 0.25:
        level = rng.choice(["INFO", "INFO", "DEBUG", "WARNING", "ERROR"])
        worker = f"{_snake(rng, (1, 1))}-{rng.randint(1, 16)}"
        return f"{ts} {level} [{worker}] {_en_sentence(rng)} ({rng.random():.3f}s)"
    if r < 0.4:
        ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        return (
            f"{ip} - - [10/Oct/2024:{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:13 +0000] "
            f'"{rng.choice(["GET", "POST", "PUT"])} '
            f'/{rng.choice(_HTTP_PATHS)}/{rng.randint(1, 9999)} HTTP/1.1" '
            f"{rng.choice([200, 200, 201, 304, 404, 500])} {rng.randint(0, 99999)}"
        )
    if r < 0.55:
        mode = rng.choice(["-rw-r--r--", "drwxr-xr-x", "-rwxr-xr-x"])
        return (
            f"{mode}  1 root root {rng.randint(0, 999999):>8} Oct {rng.randint(1, 31):>2} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
            f"{_snake(rng)}.{rng.choice(_FILE_EXTS)}"
        )
    if r < 0.65:
        test = f"tests/test_{_snake(rng)}.py::test_{_snake(rng)}"
        outcome = rng.choice(["PASSED", "PASSED", "FAILED", "SKIPPED"])
        return f"{test} {outcome} [{rng.randint(0, 100):>3}%]"
    if r < 0.75:
        sha, author, email = _hex(rng, 40), rng.choice(_NAMES), rng.choice(_NAMES).lower()
        return f"commit {sha}\nAuthor: {author} <{email}@example.com>\n\n    {_en_sentence(rng)}"
    if r < 0.8:
        pkg = _snake(rng).replace("_", "-")
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        line = f"  Downloading {pkg}-{version}-py3-none-any.whl ({rng.randint(10, 999)} kB)"
        if rng.random() < 0.5:
            size = f"{rng.randint(1, 99)}.{rng.randint(0, 9)}"
            speed = f"{rng.randint(1, 60)}.{rng.randint(0, 9)}"
            line += f"\n     {'━' * 40} {size}/{size} MB {speed} MB/s eta 0:00:00"
        return line
    if r < 0.85:
        fill = rng.choice("=-")
        title = rng.choice(
            [
                "test session starts",
                "FAILURES",
                "short test summary info",
                f"{rng.randint(1, 400)} passed in {rng.random() * 60:.2f}s",
            ]
        )
        return f"{fill * rng.randint(10, 30)} {title} {fill * rng.randint(10, 30)}"
    if r < 0.93:
        return (
            f'  File "/usr/lib/python3.11/{_path(rng)}", '
            f"line {rng.randint(1, 2000)}, in {_snake(rng)}\n"
            f"    {_snake(rng)} = {_py_expr(rng)}"
        )
    where = f"{_path(rng)}:{rng.randint(1, 999)}:{rng.randint(1, 80)}"
    return f"{where}: error: {_en_sentence(rng)}  [{_snake(rng).replace('_', '-')}]"


def gen_shell_log(rng: random.Random) -> str:
    """A burst of shell/log output: app logs, access logs, ls, pytest, git, pip, tracebacks."""
    return "\n".join(_log_line(rng) for _ in range(rng.randint(3, 12))) + "\n"


def _zh_sentence(rng: random.Random, english: float = 0.0) -> str:
    parts: list[str] = []
    for i in range(rng.randint(8, 30)):
        r = rng.random()
        if r < english:
            parts.append(_zh_english_term(rng))
        elif r < english + 0.25:
            parts.append(rng.choice(_ZH_FUNCTION))
        else:
            parts.append(_zipf_choice(rng, _ZH_WORDS, 0.3))
        if i > 2 and rng.random() < 0.08:
            parts.append(rng.choice(_ZH_PUNCT_MID))
        elif rng.random() < 0.01:
            parts.append(f"“{rng.choice(_ZH_WORDS)}”")
        elif rng.random() < 0.01:
            parts.append(f"（{rng.choice(_ZH_WORDS)}）")  # noqa: RUF001
    return "".join(parts) + rng.choice(_ZH_PUNCT_END)


def _zh_english_term(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        term = rng.choice(_EN_TECH)
    elif r < 0.6:
        term = f"`{_snake(rng)}()`"
    elif r < 0.75:
        term = str(rng.choice([rng.randint(1, 100), rng.randint(100, 100_000)]))
    elif r < 0.85:
        term = _path(rng)
    else:
        term = " ".join(_en_word(rng) for _ in range(rng.randint(2, 5)))
    # Chinese writers put spaces around embedded Latin text about half of the time.
    return f" {term} " if rng.random() < 0.5 else term


def gen_chinese(rng: random.Random) -> str:
    """One paragraph of Chinese prose with Chinese punctuation."""
    return "".join(_zh_sentence(rng) for _ in range(rng.randint(2, 6))) + "\n\n"


def gen_mixed(rng: random.Random) -> str:
    """Chinese prose that embeds English terms, code identifiers, paths and numbers."""
    return "".join(_zh_sentence(rng, english=0.15) for _ in range(rng.randint(2, 6))) + "\n\n"


def gen_markdown(rng: random.Random) -> str:
    """A Markdown section: heading, prose with emphasis/links/code, lists, fences, tables."""
    out = [f"{'#' * rng.randint(1, 3)} {_en_sentence(rng).rstrip('.?!:')}", ""]
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35:
            words = _en_paragraph(rng, (1, 4)).split(" ")
            for i in range(len(words)):
                q = rng.random()
                if q < 0.04:
                    words[i] = f"**{words[i]}**"
                elif q < 0.07:
                    words[i] = f"`{_snake(rng)}`"
                elif q < 0.085:
                    words[i] = f"[{words[i]}]({_url(rng)})"
            out.append(" ".join(words))
        elif r < 0.55:
            for n in range(rng.randint(2, 6)):
                bullet = rng.choice(["-", "*", f"{n + 1}."])
                out.append(f"{bullet} {_en_sentence(rng)}")
        elif r < 0.75:
            lang = rng.choice(["python", "bash", "json"])
            out.append(f"```{lang}")
            if lang == "python":
                out.extend(gen_python(rng).rstrip("\n").split("\n")[:12])
            elif lang == "bash":
                out.append(f"$ pip install {_snake(rng).replace('_', '-')}")
                out.extend(_log_line(rng) for _ in range(rng.randint(1, 4)))
            else:
                out.append(json.dumps(_json_record(rng), indent=2)[:600])
            out.append("```")
        else:
            cols = [rng.choice(_IDENT_PARTS) for _ in range(rng.randint(2, 5))]
            out.append("| " + " | ".join(cols) + " |")
            out.append("|" + "|".join("---" for _ in cols) + "|")
            for _ in range(rng.randint(2, 6)):
                cells = [
                    rng.choice([_en_word(rng), str(rng.randint(0, 9999)), f"{rng.random():.2f}"])
                    for _ in cols
                ]
                out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "english": gen_english,
    "python": gen_python,
    "json_pretty": gen_json_pretty,
    "json_compact": gen_json_compact,
    "shell_log": gen_shell_log,
    "chinese": gen_chinese,
    "mixed_zh_en": gen_mixed,
    "markdown": gen_markdown,
}
CATEGORIES = tuple(GENERATORS)


def generate(category: str, n_chars: int = 128_000, seed: int = 20240501) -> str:
    """Deterministic text of one category, cut to exactly ``n_chars`` characters."""
    rng = random.Random(f"{seed}:{category}")
    make = GENERATORS[category]
    parts: list[str] = []
    size = 0
    while size < n_chars:
        piece = make(rng)
        parts.append(piece)
        size += len(piece)
    return "".join(parts)[:n_chars]


# --------------------------------------------------------------------------- measuring


def _throughput(count: Callable[[str], int], text: str, min_seconds: float = 0.3) -> float:
    """Best-of-several MB/s (UTF-8 bytes of input per second, 1 MB = 10**6 bytes)."""
    size = len(text.encode("utf-8"))
    best = float("inf")
    spent = 0.0
    runs = 0
    while runs < 3 or spent < min_seconds:
        start = time.perf_counter()
        count(text)
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        spent += elapsed
        runs += 1
    return size / best / 1e6


def main(argv: list[str] | None = None) -> int:
    """Print the accuracy and throughput table; returns a process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=128_000, help="characters per category")
    parser.add_argument("--seed", type=int, default=20240501)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from harnessed.tokens import ApproxTokenEstimator, TiktokenEstimator

    approx = ApproxTokenEstimator()
    exact = TiktokenEstimator("o200k_base")
    texts = {c: generate(c, args.chars, args.seed) for c in CATEGORIES}
    texts["all (mixed)"] = "".join(texts.values())

    header = (
        f"{'category':<14} {'chars':>9} {'o200k':>8} {'chars/4':>8} {'approx':>8}"
        f" {'approx MB/s':>12} {'tiktoken MB/s':>14}"
    )
    print(f"approximate method: {approx.method}; exact: {exact.method}")
    print(header)
    print("-" * len(header))
    for name, text in texts.items():
        tokens = exact.count_text(text)
        flat = (len(text) / 4 - tokens) / tokens * 100
        estimate = (approx.count_text(text) - tokens) / tokens * 100
        print(
            f"{name:<14} {len(text):>9,} {tokens:>8,} {flat:>+7.1f}% {estimate:>+7.1f}%"
            f" {_throughput(approx.count_text, text):>12.1f}"
            f" {_throughput(exact.count_text, text):>14.1f}"
        )
    print("errors are signed: (estimate - o200k) / o200k; MB/s counts UTF-8 input bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
