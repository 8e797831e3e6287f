"""The report cache: the latest reports of each model file, so later commands need no compile.

Location: ``$TCINSPECT_CACHE_DIR`` if set, else ``.tcinspect/`` in the current directory. Each
entry is a JSON report named after the model file and a key over the file's path and content
hash, the torch version and the capture options; a changed file, torch or option never matches.
Beside the report, an entry records every source file the compile traced (``traced_files``) with
its fingerprint: its content hash, or for a file of an installed package that package's version.
An entry is current only while every one of those fingerprints still holds, so editing any module
the compile traced (the model's own imports included) means a new capture. The latest ``KEEP``
entries per model file are kept. No torch import.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Optional

from tcinspect import outfile, serialize
from tcinspect._version import __version__
from tcinspect.errors import ReportFormatError, TcinspectError
from tcinspect.report import SCHEMA_VERSION, Options, Report, Stages
from tcinspect.serialize.rules import OPTIONS_OF_SCHEMA_1

#: The key beside the report in a cache entry: {absolute path: fingerprint} of every traced file.
SOURCES_KEY = "traced_sources"
#: The key beside the report in a cache entry: the user's Inductor cache as the capture left it (``inductor_state``).
INDUCTOR_KEY = "inductor_cache"

KEEP = 5
log = logging.getLogger("tcinspect")


def cache_dir() -> Path:
    return Path(os.environ.get("TCINSPECT_CACHE_DIR") or ".tcinspect")


@lru_cache(maxsize=1)
def installed_torch_version() -> str:
    """torch's version from package metadata: as the report records it, without importing torch."""
    from importlib import metadata  # here: a saved report's read needs none of it (15-20 ms of imports)

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class Entry:
    path: Path
    report: Report
    age_s: float

    def describe(self) -> str:
        target = self.report.target.path or self.report.target.model_name
        return f"from trace of {target}, {_ago(self.age_s)}"


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{int(seconds)} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def _prefix(model_path: Path) -> str:
    resolved = str(model_path.resolve())
    return f"{model_path.stem}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"


def key(model_path: Path, sha256: str, options: Options, extra: Sequence[str] = ()) -> str:
    """The cache key of a capture: file path and content, torch version, options, model names."""
    material = json.dumps({
        "path": str(model_path.resolve()),
        "sha256": sha256,
        "torch": installed_torch_version(),
        "schema": SCHEMA_VERSION,
        "tcinspect": __version__,
        "options": keyed_options(options),
        "extra": list(extra),
    }, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


#: The options the key holds even at their default: those there were when the key took this form (schema 1's and
#: two added before it). An option added since is keyed only when it differs from its default, so that a capture
#: that does not use it keeps the key it had before the option existed (and its cached report); a new option is
#: not listed here.
_KEYED_AT_DEFAULT = OPTIONS_OF_SCHEMA_1 | {"try_mode", "per_call"}


def keyed_options(options: Options) -> dict:
    """The options as the cache key holds them (``_KEYED_AT_DEFAULT``)."""
    keyed = {}
    for f in fields(options):
        value = getattr(options, f.name)
        if f.name in _KEYED_AT_DEFAULT or value != f.default:
            keyed[f.name] = value
    return keyed


def _entry_path(model_path: Path, k: str) -> Path:
    return cache_dir() / f"{_prefix(model_path)}-{k}.json"


def lookup(model_path: Path, keys: Sequence[str]) -> Optional[Entry]:
    """The first current entry among ``keys`` (in order of preference), or None.

    Current: its key matches and every file the compile traced is as it was (``stale_sources``).
    """
    for k in keys:
        p = _entry_path(model_path, k)
        read = _read(p)
        if read is not None and not stale_sources(read[1]) and not stale_inductor_cache(read[2]):
            return read[0]
    return None


def _read(p: Path) -> Optional[tuple[Entry, Optional[dict], Optional[dict]]]:
    """An entry, its traced-source fingerprints and the Inductor cache state it was captured against (None: an
    entry written without them)."""
    try:
        text = p.read_text(encoding="utf-8")
        age = time.time() - p.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError:
        return None
    try:
        try:
            data = json.loads(text)
        except ValueError:
            raise ReportFormatError("not valid JSON (truncated?)") from None
        sources = data.pop(SOURCES_KEY, None) if isinstance(data, dict) else None
        inductor = data.pop(INDUCTOR_KEY, None) if isinstance(data, dict) else None
        rep = serialize.from_dict(data)
    except ReportFormatError as exc:
        log.warning("discarding unreadable cache entry %s: %s", p, exc.cause)
        try:
            p.unlink()
        except OSError:
            pass
        return None
    return (Entry(path=p, report=rep, age_s=max(age, 0.0)), sources if isinstance(sources, dict) else None,
            inductor if isinstance(inductor, dict) else None)


def traced_files(rep: Report) -> list[str]:
    """Every source file the compile traced, as the report names them: each frame Dynamo compiled
    (and its resume functions), every file a Dynamo graph node came from (the functions it inlined,
    from the graphs' ``# File:`` lines) and every file a graph break points at."""
    names: dict[str, None] = {}

    def add(name: str) -> None:
        if name and not name.startswith("<"):  # <string>, <eval_with_key>: no file behind them
            names.setdefault(name, None)

    def from_stages(stages: Stages, compiles: Sequence) -> None:
        for c in compiles:
            add(c.file)
        for g in stages.dynamo.graphs:
            add(g.file)
            for n in g.graph.nodes:
                if n.source is not None:
                    add(n.source.file)
        for b in stages.dynamo.graph_breaks:
            if b.user_frame is not None:
                add(b.user_frame.file)

    from_stages(rep.stages, rep.compiles)
    for r in rep.ranks:
        from_stages(r.stages, r.compiles)
    return list(names)


def _package_of(real: str) -> str:
    """The top-level import name of a file inside site-packages or dist-packages, or ""."""
    parts = real.split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return parts[i + 1].removesuffix(".py")
    return ""


@lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    from importlib import metadata

    return dict(metadata.packages_distributions())


def fingerprint(path: str) -> str:
    """A traced file's fingerprint: ``dist NAME VERSION`` for a file of an installed package (its
    version stands for its content: hashing every file of a large library would cost more than the
    compile it saves), else ``sha256 HEX`` of its bytes; ``missing`` when it cannot be read."""
    from importlib import metadata

    real = os.path.realpath(path)
    package = _package_of(real)
    versions = []
    for dist in sorted(_distributions().get(package, [])) if package else ():
        try:
            versions.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pass
    if versions:
        return "dist " + ", ".join(versions)
    try:
        return "sha256 " + hashlib.sha256(Path(real).read_bytes()).hexdigest()
    except OSError:
        return "missing"


def fingerprints(rep: Report) -> dict[str, str]:
    """{absolute path: fingerprint} of every file the report says the compile traced."""
    return {os.path.abspath(f): fingerprint(f) for f in traced_files(rep)}


def stale_sources(recorded: Optional[dict]) -> list[str]:
    """The traced files whose fingerprint no longer holds; an entry with no record is stale as a whole."""
    if recorded is None:
        return ["(entry written without its traced files)"]
    return [path for path, fp in recorded.items() if fingerprint(path) != fp]


# ----------------------------------------------------------------------------- the user's Inductor cache
#
# A report holds what the compile's caches gave: each FX graph and AOTAutograd look-up with its key and outcome,
# the compile time that followed, and advice from both. The user's own runs change those caches between two
# commands (a plain torch.compile saves entries that tcinspect's capture would then hit), so a report is reused
# only while every entry it looked up is there or not there as it was when the capture ended.


def inductor_cache_root() -> Path:
    """Inductor's cache directory as torch resolves it (torch/_inductor/runtime/cache_dir_utils.py ``cache_dir``,
    2.11-2.15: $TORCHINDUCTOR_CACHE_DIR, else ``torchinductor_<user>`` in the temp directory), without torch."""
    value = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if value:
        return Path(value).absolute()
    import getpass
    import re
    import tempfile

    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        getuid = getattr(os, "getuid", None)
        user = f"uid_{getuid()}" if callable(getuid) else "unknown_user"
    return Path(tempfile.gettempdir()) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def _entry_dir(root: Path, cache_name: str, key: str) -> Optional[Path]:
    """Where torch keeps the entries of one key (FxGraphCache / AOTAutogradCache ``_get_tmp_dir_for_key``,
    2.11-2.15); None for a cache whose entries are not files here."""
    if cache_name == "fx_graph" and len(key) > 3:
        return root / "fxgraph" / key[1:3] / key
    if cache_name == "aot_autograd":
        return root / "aotautograd" / key
    return None


def _listing(where: Optional[Path]) -> list[str]:
    try:
        return sorted(p.name for p in where.iterdir()) if where is not None and where.is_dir() else []
    except OSError:
        return []


def inductor_state(rep: Report, root: Optional[Path] = None) -> dict:
    """The report's cache look-ups and what the user's Inductor cache holds for each key now: {"dir", "entries":
    [[cache, key, outcome, [file names]]]}, one per distinct key (each rank's too)."""
    root = root or inductor_cache_root()
    seen: dict[tuple[str, str], list] = {}
    for ct in [rep.compile_time, *(r.compile_time for r in rep.ranks)]:
        for t in ct.compiles if ct is not None else ():
            for c in t.caches:
                where = _entry_dir(root, c.cache, c.key) if c.key and c.state in ("hit", "miss") else None
                if where is not None and (c.cache, c.key) not in seen:
                    seen[(c.cache, c.key)] = [c.cache, c.key, c.state, _listing(where)]
    return {"dir": str(root), "entries": list(seen.values())}


def stale_inductor_cache(recorded: Optional[dict]) -> list[str]:
    """What makes a report's cache outcomes no longer the user's: a key whose entries changed since the capture, a
    miss whose entry is there (the capture or another run saved it: the same compile would now hit), another cache
    directory. An entry written without the record is stale as a whole."""
    if recorded is None:
        return ["(entry written without the Inductor cache state)"]
    root = inductor_cache_root()
    if recorded.get("dir") != str(root):
        return [f"Inductor's cache directory is now {root}"]
    out = []
    for item in recorded.get("entries", ()):
        try:
            name, key, outcome, files = item
            now = _listing(_entry_dir(root, name, key))
        except (TypeError, ValueError):
            return ["(an unreadable Inductor cache record)"]
        if now != files or (outcome == "miss" and now):
            out.append(f"{name} {key} ({outcome} when captured)")
    return out


def store(model_path: Path, k: str, rep: Report) -> Optional[Path]:
    """Save a report under its key, then keep only the latest KEEP entries for this model file.

    A cache that cannot be written (read-only directory, full disk) costs a warning, never the run.
    """
    try:
        return _store(model_path, k, rep)
    except OSError as exc:
        log.warning("could not save the report in the cache %s: %s", cache_dir(), exc.strerror or exc)
        return None
    except TcinspectError as exc:  # e.g. an entry's name taken by a directory: never replaced
        log.warning("could not save the report in the cache %s: %s", cache_dir(), exc.cause)
        return None


def _store(model_path: Path, k: str, rep: Report) -> Path:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    ignore = d / ".gitignore"
    if not os.path.lexists(ignore):
        outfile.write(ignore, "# created by tcinspect: a cache of reports\n*\n")
    p = _entry_path(model_path, k)
    data = serialize.to_dict(rep)
    data[SOURCES_KEY] = fingerprints(rep)
    data[INDUCTOR_KEY] = inductor_state(rep)
    # compact: an entry is read by tcinspect, not by people, and a 10,000-node report is written in
    # 0.1 s instead of 0.6 s
    outfile.write(p, serialize.dump_data(data, "json", compact=True))
    siblings = sorted(d.glob(f"{_prefix(model_path)}-*.json"), key=lambda x: x.stat().st_mtime, reverse=True)
    for old in siblings[KEEP:]:
        try:
            old.unlink()
        except OSError:
            pass
    return p


def previous(model_path: Path) -> Optional[Entry]:
    """The most recent readable entry of this model file, whatever its key (the last recorded run)."""
    d = cache_dir()
    if not d.is_dir():
        return None
    try:
        found = sorted(d.glob(f"{_prefix(model_path)}-*.json"), key=lambda x: x.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for p in found:
        read = _read(p)
        if read is not None:
            return read[0]
    return None


def latest() -> Optional[Entry]:
    """The most recent readable entry in the cache, or None."""
    d = cache_dir()
    if not d.is_dir():
        return None
    for p in sorted(d.glob("*.json"), key=lambda x: x.stat().st_mtime, reverse=True):
        read = _read(p)
        if read is not None:
            return read[0]
    return None


# ----------------------------------------------------------------------------- JSON twins of YAML reports

#: Twins kept: each is a compact JSON copy of one saved YAML report, about as large as the YAML.
TWINS_KEEP = 20


def _twin_path(data: bytes) -> Path:
    # keyed by the YAML's exact bytes: an edited, replaced or truncated file never matches a twin (SHA-256: OpenSSL's
    # runs on the CPU's SHA instructions, 12 ms for 17 MB where BLAKE2b took 31)
    return cache_dir() / "twins" / f"{hashlib.sha256(data).hexdigest()[:32]}.json"


def remember_twin(yaml_text: str, rep: Report, *, timings: bool = True) -> None:
    """Keep a compact JSON twin of a YAML report just written, so reading it back skips the YAML parser.

    PyYAML's C loader takes 6 s on a 17 MB report (a 16-layer Llama training step) where ``json``
    takes 0.13 s. The YAML stays the document people read and diff; the twin is a cache entry.
    A cache that cannot be written costs nothing but speed.
    """
    try:
        _write_twin(_twin_path(yaml_text.encode("utf-8")), serialize.dumps(rep, "json", timings=timings, compact=True))
    except OSError as exc:
        log.debug("no JSON twin written in %s: %s", cache_dir(), exc)


def _write_twin(p: Path, json_text: str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    ignore = cache_dir() / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by tcinspect: a cache of reports\n*\n", encoding="utf-8")
    serialize.write_atomic(p, json_text)
    twins = sorted(p.parent.glob("*.json"), key=lambda x: x.stat().st_mtime, reverse=True)
    for old in twins[TWINS_KEEP:]:
        try:
            old.unlink()
        except OSError:
            pass


def read_report(path: str | Path) -> Report:
    """A saved report (.yaml or .json); a YAML one through its JSON twin when one matches its bytes.

    A YAML report without a twin is parsed as YAML, and its twin is written then, so only the first
    read of a report tcinspect did not write itself pays for the YAML parser.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return serialize.load(p)  # its own message for each
    if data[:1] in (b"{", b"["):
        return serialize.load(p)
    twin = _twin_path(data)
    try:
        twin_text = twin.read_bytes()  # JSON read from its bytes (msgspec): no text decoded first
    except OSError:
        twin_text = b""
    if twin_text:
        try:
            rep = serialize.loads(twin_text, name=str(p))
            os.utime(twin)  # recently read twins are the ones kept
            return rep
        except (ReportFormatError, OSError):
            pass  # a damaged twin: read the YAML itself, and write the twin again
    try:
        text = data.decode("utf-8")  # the bytes read above: the file is read and hashed once
    except UnicodeDecodeError:
        return serialize.load(p)  # its own message
    rep = serialize.loads(text, name=str(p))
    try:
        _write_twin(twin, serialize.dumps(rep, "json", compact=True))
    except OSError as exc:
        log.debug("no JSON twin written in %s: %s", cache_dir(), exc)
    return rep
