"""``harnessed.toml``: defaults for the command line, from the project and from the user.

Two files are read, the project's first: ``./harnessed.toml`` (the directory the command runs
in) and ``$XDG_CONFIG_HOME/harnessed/harnessed.toml``. A key of the project's file wins over
the user's; ``$HARNESSED_MODEL`` wins over both for the model, and a command-line flag wins
over everything. Keys::

    model = "openai:gpt-4.1-mini"
    base_url = "http://localhost:8000/v1"
    permission_mode = "accept_edits"   # default, accept_edits, explore, bypass, dont_ask
    sandbox = "host"                   # host, bubblewrap or none
    data_dir = ".harnessed-data"       # where sessions and state go (default: the user's
                                       # data directory; "." keeps them in the project)
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessed.cli.paths import config_dir

if TYPE_CHECKING:
    from harnessed.workspace.layout import Workspace

__all__ = [
    "DEFAULT_MODEL",
    "CliConfig",
    "ConfigError",
    "cli_workspace",
    "data_location",
    "holds_sessions",
    "runtime_root",
    "load_config",
    "model_options",
    "model_spec",
    "sandbox_option",
]

DEFAULT_MODEL = "openai:gpt-4.1-mini"
FILE_NAME = "harnessed.toml"
_MODES = ("default", "accept_edits", "explore", "bypass", "dont_ask")
_SANDBOXES = ("host", "bubblewrap", "none")


class ConfigError(ValueError):
    """A ``harnessed.toml`` that cannot be used (the message names the file and the key)."""


@dataclass(frozen=True)
class CliConfig:
    """The defaults read from the configuration files (``None``: not set)."""

    model: str | None = None
    base_url: str | None = None
    permission_mode: str | None = None
    sandbox: str | None = None
    data_dir: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f"{f.name} must be a non-empty string, got {value!r}")
        if self.permission_mode is not None and self.permission_mode not in _MODES:
            raise ConfigError(f"permission_mode must be one of {', '.join(_MODES)}")
        if self.sandbox is not None and self.sandbox not in _SANDBOXES:
            raise ConfigError(f"sandbox must be one of {', '.join(_SANDBOXES)}")
        if self.model is not None and ":" not in self.model:
            raise ConfigError(f"model must be provider:model, got {self.model!r}")


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    known = {f.name for f in fields(CliConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}")
    try:
        CliConfig(**data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return data


def load_config(project: Path | None = None) -> CliConfig:
    """The merged configuration: the project's file over the user's."""
    merged = _read(config_dir() / FILE_NAME)
    merged.update(_read((project or Path.cwd()) / FILE_NAME))
    return CliConfig(**merged)


def model_spec(flag: str | None, config: CliConfig | None = None) -> str:
    """The model to use: the flag, ``$HARNESSED_MODEL``, the files, then the default."""
    if flag:
        return flag
    if os.environ.get("HARNESSED_MODEL"):
        return os.environ["HARNESSED_MODEL"]
    config = config if config is not None else load_config()
    return config.model or DEFAULT_MODEL


def sandbox_option(flag: str | None, config: CliConfig) -> Any:
    """The agent's ``shell=`` for ``--sandbox`` / ``sandbox``: ``None`` (the agent's default)
    when neither says; ``False`` for ``none``."""
    name = flag or config.sandbox
    if name is None:
        return None
    if name == "none":
        return False
    if name == "host":
        from harnessed.sandbox import HostSandbox

        return HostSandbox()
    from harnessed.sandbox import BubblewrapSandbox

    return BubblewrapSandbox()


def model_options(flag: str | None, config: CliConfig) -> dict[str, Any]:
    """Keyword arguments of the model's adapter: the base URL of ``--base-url`` or the file."""
    url = flag or config.base_url
    return {"base_url": url} if url else {}


def data_location(
    workspace: str | None, flag: str | None, config: CliConfig | None = None
) -> Path | None:
    """Where the runtime data of an agent working in ``workspace`` goes (``None``: inside the
    workspace, the library's own layout). ``--data-dir`` wins; an explicit ``--workspace``
    is a harnessed workspace that holds its own data; then ``data_dir`` of the files; then a
    directory that already holds session logs keeps them (:func:`holds_sessions`); else
    the user's data directory, one folder per project (nothing is written to the project)."""
    if flag:
        return Path(flag).expanduser()
    if workspace is not None:
        return None
    config = config if config is not None else load_config()
    if config.data_dir is not None:
        return Path(config.data_dir).expanduser()
    if holds_sessions(Path.cwd()):
        return None  # a workspace with sessions of its own (an earlier version's, --workspace .)
    from harnessed.cli.paths import project_data_dir

    return project_data_dir(Path.cwd())


def cli_workspace(workspace: str | None, data_flag: str | None, config: CliConfig) -> Workspace:
    """The workspace of ``run`` and ``chat``: ``--workspace`` (default: the current directory),
    its runtime data where :func:`data_location` says."""
    from harnessed.workspace.layout import Workspace

    return Workspace(workspace or ".", data_dir=data_location(workspace, data_flag, config))


def runtime_root(workspace: str | None, data_flag: str | None) -> Path:
    """The local directory holding the runtime data (``agents/``, ``.harnessed/``) that
    ``run`` and ``chat`` wrote with the same ``--workspace`` and ``--data-dir``."""
    return data_location(workspace, data_flag) or Path(workspace or ".")


WORKSPACE_HELP = "the agent's workspace (default: the current directory)"
DATA_DIR_HELP = (
    "where run and chat keep the sessions (default: as they chose it: inside --workspace "
    "when given, else harnessed.toml's data_dir or $XDG_DATA_HOME/harnessed/projects/…)"
)


def holds_sessions(directory: Path) -> bool:
    """Whether ``directory`` holds harnessed session logs of its own (``agents/*/sessions``)."""
    return any(p.is_dir() for p in (directory / "agents").glob("*/sessions"))
