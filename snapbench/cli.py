"""The ``snapbench`` command line: thin typer commands over the library modules.

Flow: ``corrupt`` -> ``encode`` (or your own encoder) -> ``evaluate`` / ``moor`` -> report;
``conditions`` and ``preview`` help plan a run; ``diagnose`` measures the issues real queries have;
``demo`` runs it all on the bundled photos.

Library parameter names -> command-line flags: the one table the CLI renders errors with.

Library errors name parameters (``set_threshold``, references written with
:func:`snapbench.core.errors.arg`); :func:`snapbench.cli.guarded` shows them as the flag that sets them.
Most flags are the parameter with ``_`` -> ``-``; this table holds the exceptions.

What each command says when Ctrl-C (or SIGTERM, SIGHUP) stops it: only a command that resumes says
"rerun to resume".

:func:`snapbench.cli.guarded` prints the line of the command it wraps (exit 130; 143 for SIGTERM, 129
for SIGHUP: :mod:`snapbench.engines.signals`).  ``corrupt`` prints its own, with the exact command line that
resumes it.

The command class every ``snapbench`` command is built with: usage lines that read like Unix tools.

Typer writes a required argument in braces (``Usage: snapbench diagnose [OPTIONS] {queries}``), a
notation no other tool uses.  Here an argument is named in capitals, as the error messages name it
(``INPUT``, ``RUN_DIR``; :mod:`snapbench.cli`): ``QUERIES``, ``[NAME]`` when optional,
``RUN_DIR...`` when it takes several -- in the usage line, the Arguments section and the "Missing
argument" error alike.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import shlex
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from ._version import __version__
from .app.stages.options import RunOptions
from .core.conditions import parse_condition
from .core.defaults import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CI,
    DEFAULT_CLIFF_RATIO,
    DEFAULT_CLIFF_TOL,
    DEFAULT_DATA,
    DEFAULT_KS,
    DEFAULT_MAX_PIXELS,
    DEFAULT_RBO_DEPTH,
    DEFAULT_RBO_P,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from .core.errors import ConfigError, InputError, SnapbenchError, arg
from .core.image_formats import DEFAULT_IMAGE_FORMAT, IMAGE_FORMATS
from .core.install_hint import install_hint
from .core.jsonable import dumps
from .core.validate import did_you_mean, hint_and_known, positive_int
from .engines import ENGINES, check_engine
from .engines.signals import Terminated, exit_status, stop_on_termination
from .store.atomic import owning_output_dirs
from .store.folders import (
    DEMO_NAME,
    CompareDir,
    EncodeDir,
    RunDir,
    claim_output_dir,
    holds_a_demo,
    output_kind,
    refuse_output_folder,
)

#: parameter name -> flag, where the flag is not simply ``--`` + name with "_" as "-".
_FLAGS: dict[str, str] = {
    "out_dir": "--out",
    "unknown_items": "--allow-unknown-items",
    "encoder_actors": "--actors",
    "ks": "--k",
    "image_format": "--format",
    "curve_tol": "--cliff-tol",
    "curve_ratio": "--cliff-ratio",
    "dataset_format": "--format",
    "use_cache": "--no-cache",
    "whiten": "--no-whiten",
    "ci_level": "--ci",
    "manifest_path": "INPUT",
    "scores_dir": "SCORES_DIR",
    "run_dir": "RUN_DIR",
    "k": "--topk",  # fusion's top-k cut-off (evaluate's cut-offs are `ks`)
    "embeddings": "--q-image/--q-text/--g-image/--g-text",
    "names": "--name",  # compare: the library's list parameters; the CLI repeats one flag per item
    "paths": "RUN_DIR",
    "measure": "--no-measure",  # measuring is on by default; the CLI turns it off (resume refusals name it)
}


def flag(param: str) -> str:
    """The flag (or argument name) that sets the library parameter ``param``."""
    return _FLAGS.get(param) or "--" + param.replace("_", "-")


_RESUMES = "interrupted; rerun the same command to resume (finished outputs are kept)"
_NOTHING = "interrupted; nothing was written"
_PARTIAL = ("interrupted; this command does not resume: the output folder may hold some of its files "
            "(each complete, the set not); rerun the same command to write them all")

#: command -> the line printed when it is interrupted (commands not listed: nothing was written)
_ON_INTERRUPT: dict[str, str] = {
    "run": _RESUMES,  # app.stages.resume: finished query blocks and reports are kept
    "demo": _RESUMES,  # snapbench run on the bundled set
    "encode": ("interrupted; rerun the same command: embeddings already in the encoder cache are read back, "
               "not recomputed (no cache with --no-cache, nor for the toy encoder without --cache-dir)"),
    "stress": _RESUMES,  # app.stress: encoded vectors are kept in OUT/vectors/
    "report": _PARTIAL,
    "compare": _PARTIAL,
    "moor": _PARTIAL,
    # corrupt prints its own line, with the command that resumes it (_rerun)
    # diagnose, evaluate, preview: every output is written at the end (diagnose removes a folder it
    # created); conditions, additivity: print only
}


# click's MissingParameter and NoSuchOption, from the click typer raises with (recent typer versions carry
# their own copy)
_CLICK_ERRORS = importlib.import_module(typer.BadParameter.__module__)
_MISSING: type = _CLICK_ERRORS.MissingParameter
_NO_SUCH_OPTION: type = _CLICK_ERRORS.NoSuchOption
#: the validation error of a flag value that does not parse (typer checks values with pydantic) -> what it must be
_MUST_BE = {"int_parsing": "an integer", "int_from_float": "an integer", "int_type": "an integer",
            "float_parsing": "a number", "float_type": "a number"}


def _not_parsed(exc: Exception) -> str | None:
    """``must be an integer, got 'abc'`` for a flag value that does not parse as the flag's number type
    (the library's wording: :func:`snapbench.core.validate.positive_int`), else ``None``."""
    errors = getattr(exc.__cause__, "errors", None)
    first = errors()[0] if callable(errors) and errors() else {}
    what = _MUST_BE.get(first.get("type", ""))
    return None if what is None else f"must be {what}, got {first.get('input')!r}"


class Command(TyperCommand):
    """:class:`typer.core.TyperCommand` with arguments named ``NAME`` (not ``{name}``), whose flag values
    that do not parse (``--topk abc``, ``--ci x``) are said as every other refusal is: ``error: --topk: must
    be an integer, got 'abc'``, exit 2 -- not click's usage block.  Ranges are the library's checks (no typer
    ``min=``/``max=``), so ``--topk 0`` reads ``error: --topk: must be an integer >= 1, got 0`` like a library
    call.  An unknown flag is ``error: --verbose: no such option; see 'snapbench stress --help'``, with a
    did-you-mean only for a flag of the command that is close to it (not click's "Possible options", which
    counts the shared ``--`` as likeness).  A missing argument or required flag is ``error: QUERIES: required,
    not given; usage: snapbench diagnose [OPTIONS] QUERIES``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            if p.param_type_name == "argument" and p.metavar is None and p.name:
                p.metavar = p.name.upper()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name != "argument":
                pieces.extend(p.get_usage_pieces(ctx))
                continue
            name = p.metavar or (p.name or "").upper()
            if p.nargs != 1 and not name.endswith("..."):
                name += "..."
            pieces.append(name if p.required else f"[{name}]")
        return pieces

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _NO_SUCH_OPTION as exc:
            _no_such(exc.option_name, "option", _flags(self, ctx), ctx)
        except typer.BadParameter as exc:
            if exc.param is None:
                raise
            p = exc.param
            name = (next((o for o in p.opts if o.startswith("--")), p.opts[0]) if p.param_type_name == "option"
                    else p.metavar or (p.name or "").upper())
            if isinstance(exc, _MISSING):  # with the usage line, which shows where it goes
                usage = " ".join([ctx.command_path, *self.collect_usage_pieces(ctx)])
                typer.echo(f"error: {name}: required, not given; usage: {usage}", err=True)
            else:
                typer.echo(f"error: {name}: {_not_parsed(exc) or exc.message.rstrip('.')}", err=True)
            raise typer.Exit(2) from None


def _flags(command: Any, ctx: Any) -> list[str]:
    return [o for p in command.get_params(ctx) for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]


def _no_such(name: str, what: str, known: list[str], ctx: Any) -> NoReturn:
    """``error: --verbose: no such option; see 'snapbench stress --help'`` (a did-you-mean only for a close
    name, the dashes not counted as likeness), exit 2."""
    hint = did_you_mean(name, known, key=lambda o: o.lstrip("-"))
    typer.echo(f"error: {name}: no such {what}{hint}; see '{ctx.command_path} --help'", err=True)
    raise typer.Exit(2)


class Group(TyperGroup):
    """The ``snapbench`` group: an unknown command or a flag it does not take is said as every other
    refusal is (``error: rnu: no such command (did you mean 'run'?); see 'snapbench --help'``, exit 2)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _NO_SUCH_OPTION as exc:
            _no_such(exc.option_name, "option", _flags(self, ctx), ctx)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            _no_such(args[0], "command", self.list_commands(ctx), ctx)
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=Group,
    name="snapbench",
    help=(
        "Paired robustness evaluation of image+text retrieval.\n\n"
        "corrupt queries -> encode with your model -> evaluate ΔR@k with CIs -> fuse with MOOR."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,  # help texts are plain: 'snapbench[codecs]' must not be read as a markup tag
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: what a detector of each side needs: said when the query set has none ("n/a (no questions)")
_SIDE_NOUN = {"image": "readable images", "text": "questions"}


_ENCODER_HELP = (
    "Encoder spec: 'toy', 'hf:NAME_OR_PATH' (transformers CLIP/SigLIP), 'sentence-transformers:NAME_OR_PATH', "
    "'open_clip:ARCH[:PRETRAINED_OR_FILE]', 'package.module:attribute' (your own), or a plugin name."
)

# Options several commands declare with one meaning and one help (each command gives its default);
# an option whose help says something of its command is declared in that command.
_Encoder = Annotated[str, typer.Option("--encoder", "-e", metavar="SPEC", help=_ENCODER_HELP)]
_Grid = Annotated[Optional[Path], typer.Option("--grid", help="Severity grid override file (JSON/TOML).")]
_Seed = Annotated[int, typer.Option("--seed", help="Seed of the corruptions and the bootstrap.")]
_Resamples = Annotated[int, typer.Option("--resamples", help="Bootstrap resamples for the CIs.")]
_Ks = Annotated[str, typer.Option("--k", help="Cut-offs of hit@k, recall@k, ndcg@k.")]
_Gallery = Annotated[Optional[Path], typer.Option("--gallery", help="Gallery JSONL for a JSONL query manifest.")]
_Qrels = Annotated[Optional[Path], typer.Option("--qrels", help="Relevance labels (TREC or JSON) where the dataset has none of its own.")]
_Device = Annotated[Optional[str], typer.Option("--device", help="Encoder device: a torch device, e.g. cuda, cuda:1, mps, cpu; checked for every encoder (default: cuda when available, else cpu).")]
_BatchSize = Annotated[Optional[int], typer.Option("--batch-size", help="Encoder batch size.")]
_CacheDir = Annotated[Optional[Path], typer.Option("--cache-dir", help="Embedding cache folder (default: $SNAPBENCH_CACHE or ~/.cache/snapbench); giving it caches cheap encoders (toy) too.")]
_NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the embedding cache (default: every encoder with a fingerprint but cheap ones such as toy).")]
_Force = Annotated[bool, typer.Option("--force", help="Discard an earlier run in --out made with another configuration.")]
_NoProgressBar = Annotated[bool, typer.Option("--no-progress", help="Do not show the progress bar.")]
_NoProgressBars = Annotated[bool, typer.Option("--no-progress", help="Do not show progress bars.")]
_Dpi = Annotated[int, typer.Option("--dpi", help="Resolution of the PNG figures (50 to 600).")]


def _quiet(silenced: str, listed: str) -> Any:
    """The ``--quiet``/``-q`` flag of run, compare and stress (one meaning): for scripts, no progress and
    no messages (``silenced``: what the command would print), stdout lists ``listed``, one path per line."""
    return Annotated[bool, typer.Option(
        "--quiet", "-q", help=f"For scripts: no progress, {silenced}; stdout lists {listed}, one path per line. "
                              "Errors and warnings still go to stderr.")]


_QuietCompare = _quiet("no notes, no tables", "compare.json (and compare.html when written)")
_QuietRun = _quiet("no messages, no table", "the result files (each report.json, headline.json, report.html)")
_QuietStress = _quiet("no messages, no findings", "the result files (stress.json, per_query.csv, report.html)")
_FORMATS = "html,md,tex,csv,parquet,png,pdf"  # report's and compare's --formats default: every output


def _severity_target(help: str) -> Any:
    """``--severity-target`` with the help of its command (what the levels are made for there)."""
    return Annotated[Optional[str], typer.Option("--severity-target", metavar="METRIC=V1,V2,...", help=help)]
_EPILOG = (
    "Inputs, one of:\n\n"
    "* --q-image --q-text --g-image --g-text: embeddings, .npy or .safetensors (file.safetensors#key; "
    "needs snapbench[safetensors]). A .npy gallery is streamed from disk.\n\n"
    "* --paths-dir DIR: four path score matrices per condition, DIR/<cond>.II.npy .TT.npy .IT.npy .TI.npy "
    "or DIR/II/<cond>.npy ... (each sub-folder a SCORES_DIR), plus query_ids.txt and gallery_ids.txt "
    "(the layout `snapbench encode` writes to OUT/paths). Path scores are fused as given (gates, variance "
    "weights, fusion): whitening needs the embeddings, so --no-whiten, --dtype, --chunk-size and --ann do "
    "not apply; `snapbench encode` writes plain cosine paths, i.e. MOOR without whitening.\n\n"
    "* --embeddings-dir DIR: every condition of an EMBEDDINGS_DIR (DIR/gallery.image.npy, gallery.text.npy, "
    "<cond>.image.npy, <cond>.text.npy: the layout `snapbench encode` writes to OUT/embeddings), fused with "
    "one gallery fit; ids from DIR or its parent.\n\n"
    "Ids: --query-ids/--gallery-ids, else the files found next to the input; else the positions "
    "(q0, q1, ... / g0, g1, ...) are used and written to OUT (a warning says so): qrels must then use "
    "those ids.\n\n"
    "Output: --out OUT is a SCORES_DIR that `snapbench evaluate` reads: OUT/<cond>.npy fused scores (Q x N) "
    "or, with --topk K, OUT/<cond>.trec TREC runs; OUT/query_ids.txt, OUT/gallery_ids.txt; per-query weights "
    "in OUT/moor_weights/<cond>.csv (query_id, w_II, w_TT, w_IT, w_TI, r_TT, r_IT, r_TI, text_share, fallback). "
    "With --ann, OUT/ann_recall.json holds, per condition, the top-K overlap of the approximate top-K with "
    "exact MOOR (key topk_overlap: the share of the exact top-K the ANN search returned) on --ann-check "
    "sampled queries (and which query rows were sampled).\n\n"
    "Example: snapbench moor --q-image qI.npy --q-text qT.npy --g-image gI.npy --g-text gT.npy "
    "--query-ids qids.txt --gallery-ids gids.txt --out fused/"
)
_DEFAULT = RunOptions()  # the flags' defaults are the library's (snapbench.app.stages imports the run lazily)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"snapbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the snapbench version and exit."
    ),
) -> None:
    """Paired robustness evaluation of image+text retrieval."""
    from .engines.shm import remove_stale_shared

    remove_stale_shared()  # shared-memory blocks a killed snapbench left behind (any command cleans them)


def _warn(message: Warning | str) -> None:
    """A warning as every command prints it: one ``warning: ...`` line on stderr."""
    typer.echo(f"warning: {message}", err=True)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """Python's warnings reach the terminal as :func:`_warn` lines, not in Python's file:line format."""
    _warn(message)


def guarded(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command; map snapbench's errors and OS errors to ``error: <file>: <problem>``, exit 2.

    A command's output folders are locked while it runs, and one that fails leaves no output folder it
    created and wrote nothing into (:func:`snapbench.store.atomic.owning_output_dirs`).

    Ctrl-C prints the command's line of :data:`_ON_INTERRUPT` and exits 130; SIGTERM and SIGHUP do the
    same with exit status 143 and 129 (:mod:`snapbench.engines.signals`).

    This is the one place where library exceptions become CLI messages: commands raise
    :class:`~snapbench.core.errors.SnapbenchError` (or let ``OSError`` through) instead of printing.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings(), owning_output_dirs(), stop_on_termination():
                warnings.showwarning = _show_warning
                return command(*args, **kwargs)
        except SnapbenchError as exc:
            typer.echo(f"error: {exc.render(flag)}", err=True)
            raise typer.Exit(2) from None
        except ImportError as exc:
            if "pip install" not in str(exc):  # a broken installation, not a missing extra: keep the traceback
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except BrokenPipeError:
            # the reader went away (`snapbench conditions | head -1`): stop quietly, like other Unix
            # tools; stdout is pointed at /dev/null so Python's final flush does not complain
            import os
            import sys

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None
        except OSError as exc:
            where = exc.filename if exc.filename is not None else ""
            what = exc.strerror or str(exc)
            typer.echo(f"error: {where}: {what}" if where else f"error: {what}", err=True)
            raise typer.Exit(2) from None
        except (KeyboardInterrupt, Terminated) as exc:
            typer.echo(_ON_INTERRUPT.get(command.__name__, _NOTHING), err=True)
            raise typer.Exit(exit_status(exc)) from None

    return wrapper


def compare(
    run_dirs: list[Path] = typer.Argument(
        ..., metavar="RUN_DIR...",
        help="Run folders (snapbench run), a folder of a several-encoder run (expands to its encoders), or "
             "'snapbench evaluate --per-query' report files; at least two models in all."),
    out: Path = typer.Option(..., "--out", help="Output folder: compare.json, compare.html, tables/, records/, figures/."),
    name: Optional[list[str]] = typer.Option(
        None, "--name", metavar="NAME",
        help="Model names, one per model in order (default: the encoder folder of a several-encoder run, the run's "
             "encoder, or the report file's stem)."),
    reference: Optional[str] = typer.Option(None, "--reference", help="Reference model of the corruption errors (CE = 1); default: the first."),
    correction: str = typer.Option("holm", "--correction", help="p-value adjustment across conditions: holm (family-wise) or bh (false discovery rate)."),
    modes: Optional[str] = typer.Option(
        None, "--modes", help="Comma-separated targets (I2I, T2T, IT2IT, I2IT, T2IT, MOOR, fusion/<name>); default: every "
                              "mode and MOOR all runs have. One target also names the target of evaluate reports "
                              "that record none (scores evaluated without --mode)."),
    metrics: Optional[str] = typer.Option(
        None, "--metrics", help="Comma-separated metrics or families (hit, recall@5, ndcg, mrr), or 'all'; default: the "
                                "runs' hit@k (R@k), the fastest to compare."),
    metric: Optional[str] = typer.Option(None, "--metric", help="Headline metric of the page, figures and findings (default: hit@1; overlap@10 where hit@1 is not compared, as for runs without labels)."),
    resamples: Optional[int] = typer.Option(None, "--resamples", help="Bootstrap resamples (default: the runs' own)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the resamples (default: the runs' seed)."),
    ci: Optional[float] = typer.Option(None, "--ci", help="Confidence level of the intervals (default: the runs' own, e.g. 0.95)."),
    formats: str = typer.Option(
        _FORMATS, "--formats",
        help="Comma-separated outputs besides compare.json and findings.json: html (compare.html), md/tex (tables/), "
             "csv/parquet (records/), png/pdf (figures/; need the 'report' extra)."),
    dpi: _Dpi = 120,
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show progress."),
    quiet: _QuietCompare = False,
) -> None:
    """Compare models on the same corrupted queries: paired differences of drops with CIs and exact or
    permutation tests (adjusted across conditions), rankings with rank intervals and tiers, corruption
    errors, effective robustness and super-additivity, per retrieval mode.

    Refuses runs whose queries, gallery, qrels, planned conditions, seed or metric settings differ (the
    variant source may differ: released vs generated variants of one model is a valid comparison). A
    run that reads one side of the query only (a text-only encoder) is compared with the others on the
    conditions every run has, with a warning naming the conditions left out.

    When it is done it prints, per target, the ranking by the headline metric (--metric) with rank
    intervals and tiers, and the pairs of models told apart: the records of compare.json.
    """
    from .app.compare import CompareOptions, compare_runs
    from .core.validate import comma_list
    from .render.console import stderr_console

    opts = CompareOptions(
        names=name or None, reference=reference, correction=correction, modes=comma_list(modes, "modes"),
        metrics=comma_list(metrics, "metrics"), metric=metric, resamples=resamples, seed=seed, ci=ci,
        formats=comma_list(formats, "formats") or [], dpi=dpi,
    )
    err = stderr_console()
    if no_progress or quiet:
        res = compare_runs(run_dirs, out, opts)
    else:
        with err.status("compare") as status:
            res = compare_runs(run_dirs, out, opts, progress=lambda msg: status.update(f"compare: {msg}"))
    for note in res.notes:
        if note not in res.warnings and not quiet:
            err.print(f"note: {note}", highlight=False, markup=False)
    for warning in res.warnings:
        _warn(warning)
    st = res.settings
    if quiet:

        cd = CompareDir(out)
        for path in (cd.compare_json, cd.html):
            if path in res.files:
                typer.echo(str(path))
        return
    from .app.compare import ordered_targets
    from .render.terminal import print_comparison, results_console

    print_comparison(res.comparison, ordered_targets(st.targets), st.metric, st.ci, opts.correction, results_console())
    typer.echo(f"compared {len(res.sources)} models ({', '.join(s.name for s in res.sources)}) on "
               f"{', '.join(st.targets)} x {', '.join(st.metrics)} in {res.timings['total_s']:.1f} s")
    html = CompareDir(out).html
    removed = f" (removed {len(res.removed)} files of the previous compare it did not write again)" if res.removed else ""
    typer.echo(f"wrote {len(res.files)} files under {out}{removed}" + (f"; open {html}" if html in res.files else ""))


def conditions(
    joint: bool = typer.Option(False, "--joint", help="Also list the 18 joint image+text conditions."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of objects (id, kind, operator, severity)."),
    grid: Optional[Path] = typer.Option(
        None, "--grid", help="Severity grid override (JSON/TOML); extra levels and registered operators are listed too."
    ),
) -> None:
    """List condition ids, one per line: clean, 45 image, 8 text (54 states); --joint adds 18 joint."""
    from .corruptions.plan import plan_conditions


    conds = plan_conditions(None, joint=joint, grid=grid).conditions  # the list a run with these options uses
    text = dumps([c.to_dict() for c in conds], indent=2) if as_json else "\n".join(c.id for c in conds)
    typer.echo(text)  # a reader that stops early (| head -1) is handled once, in cli.guarded


def _format_help() -> str:
    """``--format``'s help from the format table: the names, the default, what each needs."""
    names = [f"{n} (default)" if n == DEFAULT_IMAGE_FORMAT else n for n in IMAGE_FORMATS]
    by_extra: dict[str | None, list[str]] = {}
    for name, fmt in IMAGE_FORMATS.items():
        by_extra.setdefault(fmt.extra, []).append(name)
    needs = [f"{', '.join(ns)}: {install_hint(x)}" for x, ns in by_extra.items() if x is not None]
    needs += [f"{', '.join(by_extra[None])}: nothing extra"] if None in by_extra else []
    return f"Lossless file format of the variants: {', '.join(names)} ({'; '.join(needs)})."


def corrupt(
    input: Path = typer.Argument(
        ...,
        help="Query manifest: JSONL / JSON list (id, image, question, entity) or the SnapBench release's snap_bench.json.",
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (images/, manifest.jsonl, skips.jsonl, run.json)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Global seed; all randomness is keyed by (seed, query id, operator, severity)."),
    conditions: Optional[str] = typer.Option(
        None,
        "--conditions",
        help=(
            "Comma-separated condition ids (default: all 54 states). Any joint/<image op>+<text op>/s<N> works; "
            "its image and text parts are added."
        ),
    ),
    joint: bool = typer.Option(False, "--joint", help="Add the paper's 18 joint image+text conditions."),
    workers: int = typer.Option(1, "--workers", help="Worker processes, at least 1 (one query per work unit)."),
    engine: str = typer.Option("local", "--engine", help="Where the workers run: local (process pool) or ray (needs snapbench[ray])."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (with --engine ray; default: a local Ray started on demand)."),
    grid: _Grid = None,
    force: bool = typer.Option(
        False, "--force", help="Discard an earlier run in --out made with another seed, grid, format or library versions."),
    max_pixels: int = typer.Option(
        DEFAULT_MAX_PIXELS, "--max-pixels", help="Largest input image (width x height) to load; larger ones are skipped."),
    no_progress: _NoProgressBar = False,
    image_format: str = typer.Option(DEFAULT_IMAGE_FORMAT, "--format", help=_format_help()),
    severity_target: _severity_target(
        "Make s1, s2, ... a measured strength per image, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (one value per "
        "grid level, s1 first, each lower than the one before): each operator's knob is searched until the variant "
        "measures the target (within 0.01 SSIM / 0.5 dB).") = None,
    no_measure: bool = typer.Option(
        False, "--no-measure", help="Do not record each variant's measured strength (manifest \"measured\": PSNR, SSIM, edits)."),
) -> None:
    """Corrupt every query: clean + 45 image + 8 text conditions (and joint ones); resumable.

    Rerunning into the same --out keeps finished outputs (verified by sha256) and redoes the rest;
    after Ctrl-C the command to resume is printed. Each manifest line records the variant's measured
    strength ("measured"; --no-measure turns it off) and, with --severity-target, how close the search came
    ("target").

    Bad image files and unfindable entities are recorded in skips.jsonl and the run goes on; the exit status is 0
    unless the input or the options are invalid, or no query could be read at all (2, with the first reason).
    """
    from .app.corrupt import CorruptOptions, nothing_written_error, run_corruption
    from .core.validate import comma_list
    from .corruptions.target import parse_severity_target

    opts = CorruptOptions(
        seed=seed, conditions=comma_list(conditions, "conditions"), joint=joint,
        workers=positive_int(workers, "workers"), engine=engine, address=address, grid=grid,
        progress=not no_progress, force=force, image_format=image_format,
        max_pixels=positive_int(max_pixels, "max_pixels"), measure=not no_measure,
        severity_target=parse_severity_target(severity_target))
    try:
        summary = run_corruption(input, out, opts, log=_warn)
    except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C, SIGTERM, SIGHUP
        typer.echo(f"interrupted: the outputs finished so far are kept in {out}; to resume, run:\n  "
                   f"{shlex.join(_rerun(input, out, opts, no_progress))}", err=True)
        raise typer.Exit(exit_status(exc)) from None
    _report(summary)
    if summary.written + summary.reused == 0:
        raise nothing_written_error(input, summary.out_dir, summary.n_queries, opts.max_pixels)


def _rerun(input: Path, out: Path, opts, no_progress: bool) -> list[str]:
    """The command line that resumes an interrupted run (the options that differ from the defaults)."""
    from .app.corrupt import CorruptOptions

    default = CorruptOptions()  # the flags' defaults (tests/test_cli_defaults.py holds them equal)
    rerun = ["snapbench", "corrupt", str(input), "--out", str(out), "--seed", str(opts.seed)]
    if opts.conditions is not None:
        rerun += ["--conditions", ",".join(opts.conditions)]
    if opts.joint:  # --joint and --no-measure are switches: their off state is the default
        rerun.append("--joint")
    if opts.workers != default.workers:
        rerun += ["--workers", str(opts.workers)]
    if opts.engine != default.engine:
        rerun += ["--engine", opts.engine] + (["--address", opts.address] if opts.address else [])
    if opts.grid is not None:
        rerun += ["--grid", str(opts.grid)]
    if opts.image_format != default.image_format:
        rerun += ["--format", opts.image_format]
    if opts.max_pixels != default.max_pixels:
        rerun += ["--max-pixels", str(opts.max_pixels)]
    if opts.severity_target is not None:
        rerun += ["--severity-target", opts.severity_target.spec]
    if not opts.measure:
        rerun.append("--no-measure")
    if no_progress:
        rerun.append("--no-progress")
    return rerun


def _report(summary) -> None:
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions -> {summary.out_dir}\n"
        f"written: {summary.written}  reused: {summary.reused}  skipped: {summary.skipped}"
        f" ({summary.skipped_queries} whole quer{'y' if summary.skipped_queries == 1 else 'ies'})"
        f"  time: {summary.elapsed_s:.1f} s"
    )
    if summary.added_conditions:
        typer.echo(f"added joint parts (for additivity): {', '.join(summary.added_conditions)}")
    if summary.guessed_entities:
        typer.echo(
            f"entity guessed for {summary.guessed_entities} queries (no entity field): their text conditions "
            "edit the last non-stopword word of the question"
        )
    if summary.unguessed_entities:
        typer.echo(f"no entity for {summary.unguessed_entities} queries (no entity field, no non-stopword word in the "
                   "question): their text conditions are skipped")
    if summary.targeted:
        from .corruptions.target import target_summary

        typer.echo(target_summary(summary.target_outcome, '"reached": false in manifest.jsonl'))
    if summary.warnings:
        typer.echo(f"input warnings: {len(summary.warnings)} (printed above)")
    if summary.skipped:
        typer.echo(f"skip reasons: {summary.skips_path}")


def demo(
    out: Path = typer.Option(Path("demo_out"), "--out", help="Output folder (reports per mode, MOOR, report.html)."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Dataset to use instead of the bundled one (a folder with queries.jsonl, gallery.jsonl, qrels.json)."
    ),
    seed: _Seed = _DEFAULT.seed,
    workers: int = typer.Option(_DEFAULT.workers, "--workers", help="Processes that corrupt queries while the encoder runs."),
    resamples: _Resamples = _DEFAULT.resamples,
    no_progress: _NoProgressBars = False,
    force: bool = typer.Option(
        False, "--force", help="Replace OUT even when it holds a run that is not a demo's (a demo's own earlier output "
                               "is always replaced)."),
) -> None:
    """The whole paired evaluation on the bundled demo set: snapbench run + snapbench report with the toy encoder.

    12 queries x 72 conditions (54 states + 18 joint) x five retrieval modes, MOOR and two fixed-fusion
    baselines, bootstrap CIs, additivity, then OUT/report.html. The toy encoder is not a retrieval model:
    the numbers show the pipeline, not a model.  OUT may hold an earlier demo (it is replaced); any
    other run there is refused as 'snapbench run' refuses it, unless --force.
    """
    from .app.stages import run_benchmark
    from .data import load_dataset
    from .render.console import stderr_console, stdout_console
    from .render.terminal import demo_table
    from .store.rundir import read_report

    positive_int(workers, "workers")
    positive_int(resamples, "resamples", minimum=100)
    # before anything is printed or computed: another command's folder is refused, naming demo (it writes a run)
    claim_output_dir(out, "run", command="demo")
    replace = force or holds_a_demo(out)
    console = stderr_console()
    if data is not None:
        refuse_output_folder(data, "a dataset")  # a run or corrupt folder would be read as a dataset, wrongly
    ds = load_dataset(data or DEFAULT_DATA)
    if data is None:
        ds = dataclasses.replace(ds, name=DEMO_NAME)  # not the manifest's file name
    console.rule(f"snapbench run: {len(ds.queries)} queries, {len(ds.gallery)} gallery items, toy encoder")
    result = run_benchmark(
        ds, "toy", out,
        RunOptions(seed=seed, workers=workers, resamples=resamples, use_cache=False, force=replace, progress=not no_progress,
                   command="demo"),
        log=lambda msg: console.print(msg, markup=False, highlight=False),
    )

    stdout_console().print(demo_table({name: read_report(path) for name, path in result.reports.items()}))
    typer.echo(f"{result.n_queries} queries x {len(result.conditions)} conditions in {result.elapsed_s:.1f} s -> {out}")
    if result.html is not None:
        typer.echo(f"report: {result.html}")


def diagnose(
    queries: Path = typer.Argument(
        ...,
        help=(
            "Query set: any dataset snapbench reads (snap_bench.json, ImageFolder copy, PhotoBench album, JSONL "
            "manifest), a 'snapbench corrupt' output folder, a folder of images, or a .txt file of questions (one per line)."
        ),
    ),
    out: Path = typer.Option(..., "--out", help="Output folder: diagnose.csv, summary.json, diagnose.html."),
    questions: Optional[Path] = typer.Option(
        None, "--questions", help="With a folder of images: JSONL or CSV with 'image' (relative path) and 'question' (+ 'entity', 'id')."
    ),
    format: Optional[str] = typer.Option(
        None, "--format",
        help="Force the input kind: snapbench-json, hf-imagefolder, photobench, jsonl, corrupt-output, image-folder, questions.",
    ),
    thresholds: Optional[Path] = typer.Option(
        None, "--thresholds", help="TOML/JSON file replacing shipped thresholds (same sections as snapbench/diagnose/thresholds.toml)."
    ),
    words: Optional[Path] = typer.Option(None, "--words", help="Extra known words for the oov detector (whitespace-separated)."),
    examples: int = typer.Option(8, "--examples", help="Flagged examples per detector shown in diagnose.html."),
    no_progress: _NoProgressBar = False,
) -> None:
    """Diagnose real queries: blur, low light, overexposure, compression, low resolution; out-of-vocabulary
    words, few content tokens, no entity; plus query-set checks (missing entities, duplicates, small images).

    Unreadable images are recorded as skips; the run goes on. Thresholds: snapbench/diagnose/thresholds.toml.
    """
    from .app.diagnose import run_diagnose
    from .render.fmt import points

    res = run_diagnose(queries, out, questions=questions, format=format, thresholds=thresholds, words=words,
                       examples=examples, progress=not no_progress,
                       # what the loader says about the input (a manifest found next to it, a field read
                       # under another name) is information, not a warning
                       log=lambda m: typer.echo(f"note: {m}", err=True))
    s = res.summary

    def pct(x: dict) -> str:
        if x.get("not_applicable"):
            return f"n/a ({x['not_applicable']})"
        lo, hi = x["ci"]
        return "n/a" if x["n"] == 0 else f"{points(x['share'])}% [{points(lo)}, {points(hi)}]"

    typer.echo(f"{s['n_queries']} queries ({s['n_images']} images, {s['n_questions']} questions) -> {res.out_dir}"
               f"  time: {res.elapsed_s:.1f} s")
    typer.echo(f"any issue {pct(s['any'])}  image only {pct(s['image_only'])}  text only {pct(s['text_only'])}"
               f"  both {pct(s['both'])}")
    typer.echo("  ".join(f"{d} {pct(v)}" if v["n"] else f"{d} n/a (no {_SIDE_NOUN[v['side']]})"
                         for d, v in s["shares"].items()))
    checks = {k: v["count"] for k, v in s["checks"].items() if v["count"]}
    if checks:
        typer.echo("query-set checks: " + ", ".join(f"{k} {v}" for k, v in checks.items()))
    if s["skips"]:
        typer.echo(f"skipped images: {len(s['skips'])} (listed in summary.json)")


def encode(
    corrupted: Path = typer.Argument(..., help="Output folder of 'snapbench corrupt' (holds manifest.jsonl)."),
    gallery: Path = typer.Option(..., "--gallery", help="Gallery manifest: JSONL/JSON list of {id, image, caption} (either may be missing)."),
    out: Path = typer.Option(..., "--out", help="Output folder: embeddings/, paths/ (a SCORES_DIR of per-path matrices), dropped_queries.json."),
    encoder: _Encoder = "toy",
    device: _Device = None,
    conditions: str | None = typer.Option(None, "--conditions", help="Comma-separated condition ids (default: all in the manifest)."),
    batch_size: int = typer.Option(DEFAULT_BATCH_SIZE, "--batch-size", help="Images decoded and encoded at a time (memory grows with it, not with the gallery)."),
    cache_dir: _CacheDir = None,
    no_cache: _NoCache = False,
    no_progress: _NoProgressBar = False,
    engine: str = typer.Option("local", "--engine", help=f"{' or '.join(ENGINES)}: local encodes in this process, ray on a pool of Ray actors (one model load each; needs snapbench[ray])."),
    actors: int = typer.Option(1, "--actors", help="With --engine ray: encoder actors (a GPU each when the cluster has them)."),
    address: str | None = typer.Option(None, "--address", help="With --engine ray: the Ray cluster (auto, ray://HOST:10001); default: a local Ray."),
) -> None:
    """Encode every condition's queries and the gallery; write embeddings and the path scores.

    Writes the paths the data and the encoder allow (II, TT, IT, TI; a text-only model: TT only)
    and says which were skipped and why.  Queries missing under some condition are dropped from all
    (listed in OUT/dropped_queries.json).  Then: 'snapbench evaluate OUT/paths --mode IT2IT --qrels ...'
    or 'snapbench moor --paths-dir OUT/paths --out fused/'.
    """
    from .app.encode import check_conditions, prepare_out_dir
    from .app.stages.encoders import close_encoder, open_encoder
    from .core.validate import comma_list
    from .data.common import read_gallery_manifest
    from .models.device import check_device
    from .store.cache import CachedEncoder, check_cache_dir

    cond_list = comma_list(conditions, "conditions")
    positive_int(batch_size, "batch_size")
    check_engine(engine, 1, address)
    positive_int(actors, "actors")
    check_device(device)
    if cache_dir is not None:
        check_cache_dir(cache_dir)
    # Inputs and the output folder are checked before a (possibly multi-GB) model is loaded.
    prepare_out_dir(out)  # outputs first: a wrong --out is said before anything is read
    check_conditions(corrupted, cond_list)  # a folder that is not a corrupt output; ids it has no outputs for
    items = read_gallery_manifest(Path(gallery))
    enc, note = open_encoder(encoder, device=device, batch_size=batch_size, engine=engine,
                             actors=actors if engine == "ray" else 0, address=address,
                             use_cache=False if no_cache else None, cache_dir=cache_dir, progress=not no_progress)
    try:
        if note:
            warnings.warn(note, stacklevel=1)
        if isinstance(enc, CachedEncoder):
            typer.echo(f"embedding cache: {enc.cache_dir}", err=True)
        _encode_with(enc, corrupted, out, encoder, cond_list, batch_size, no_progress, items)
    finally:
        close_encoder(enc)


def _encode_with(enc, corrupted, out, encoder, cond_list, batch_size, no_progress, items) -> None:
    """The encode command once the encoder is open (in this process or as a Ray actor pool)."""
    from .app.encode import encode_corrupted
    from .render.progress import ProgressDisplay
    from .store.cache import CachedEncoder

    with ProgressDisplay(not no_progress) as bar:
        tasks: dict[str, object] = {}
        seen: dict[str, int] = {}

        def tick(stage: str, done: int, total: int) -> None:
            key = stage if stage.startswith("gallery") else "conditions"
            if key not in tasks:
                tasks[key] = bar.add(f"encoding {key}", total)
            bar.advance(tasks[key], done - seen.get(key, 0))
            seen[key] = done

        summary = encode_corrupted(corrupted, items, enc, out, conditions=cond_list, batch_size=batch_size, progress=tick)
    typer.echo(
        f"{summary.n_queries} queries x {len(summary.conditions)} conditions, {summary.n_gallery} gallery items, "
        f"paths {', '.join(summary.paths)} -> {out}"
    )
    typer.echo(f"retrieval modes these paths give: {', '.join(summary.modes) or 'none'} "
               f"(snapbench evaluate {out / 'paths'} --mode MODE --qrels ...)")
    if summary.joint:
        typer.echo(f"native joint IT→IT scores of {getattr(enc, 'name', encoder)!r}: {out / 'paths'}/<condition>.npy "
                   "(what 'snapbench evaluate OUT/paths' scores without --mode)")
    if summary.skipped_paths:
        by_reason: dict[str, list[str]] = {}
        for p, why in summary.skipped_paths.items():
            by_reason.setdefault(why, []).append(p)
        typer.echo("skipped paths: " + "; ".join(f"{', '.join(ps)} ({why})" for why, ps in by_reason.items()), err=True)
    if summary.dropped_queries:
        typer.echo(
            f"dropped {len(summary.dropped_queries)} queries not produced under every condition "
            f"(kept paired; reasons in {EncodeDir(out).dropped_queries})",
            err=True,
        )
    if isinstance(enc, CachedEncoder):
        typer.echo(f"embedding cache: {enc.hits} hits, {enc.misses} encoded", err=True)


def _check_chosen_metrics(evaluated: list[str], primary: str, stability_metric: str) -> None:
    """An explicitly chosen --primary / --stability-metric must be evaluated (defaults adapt)."""
    from .evaluate.metrics import is_binary_metric

    if primary != "hit@1" and primary not in evaluated:
        raise ConfigError(f"{primary!r} is not among the evaluated metrics{hint_and_known(primary, evaluated)}",
                          param="primary")
    if stability_metric != "hit@1":
        if not is_binary_metric(stability_metric):
            raise ConfigError(f"must be a hit@k metric, got {stability_metric!r}", param="stability_metric")
        if stability_metric not in evaluated:
            raise ConfigError(f"{stability_metric!r} is not among the evaluated metrics"
                              f"{hint_and_known(stability_metric, evaluated)} (add it to {arg('metrics')} or {arg('ks')})",
                              param="stability_metric")


def _nothing_measured(report) -> bool:
    """No value at all, or labels given and no labelled value (the stability measures alone say nothing
    about the labels that were meant to be measured)."""
    from .evaluate.stability import is_stability_metric

    labelled = report.meta.get("labelled", True) is not False
    return not any(v is not None for vals in report.conditions.values() for m, v in vals.items()
                   if not (labelled and is_stability_metric(m)))


def evaluate(
    scores_dir: Path = typer.Argument(
        ..., help="Folder with one <condition>.npy score matrix per condition (Q x N; 'clean.npy', "
        "'img__motion_blur__s2.npy', 'joint__compression+char_add__s3.npy', ...) plus query_ids.txt and "
        "gallery_ids.txt; or one <condition>.run/.trec TREC run per condition."
    ),
    qrels: Path | None = typer.Option(
        None, "--qrels", help="Relevance labels: TREC qrels ('qid 0 docid rel') or JSON {query_id: [gallery_id, ...]} "
        "(empty list = zero-GT query) or {query_id: {gallery_id: grade}}. Without it only the label-free "
        "stability measures are computed (overlap@k, rbo, flip@1: how far each condition's ranking moved from clean's)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON report here."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the bootstrap resamples and permutations."),
    k: str = typer.Option(",".join(map(str, DEFAULT_KS)), "--k", help="Cut-offs for hit/recall/ndcg given without @k."),
    metrics: str | None = typer.Option(
        None, "--metrics", help="Comma list: hit, recall, ndcg (optionally @k), mrr, mrr@k, set_precision, set_recall, "
        "set_f1, reject_precision, reject_recall, reject_f1, or 'set'/'reject'; label-free: overlap (@k), rbo, flip@k. "
        "Default: hit,recall,ndcg,mrr,overlap,rbo,flip@1 (without --qrels: overlap,rbo,flip@1; + set and reject "
        "metrics when --set-threshold is given)."
    ),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Bootstrap resamples of the queries (paired, shared by all conditions)."),
    permutations: int | None = typer.Option(None, "--permutations", help="Permutations for the non-hit metrics' test (default = --resamples)."),
    ci: float = typer.Option(DEFAULT_CI, "--ci", help="Confidence level of the percentile bootstrap intervals."),
    tags: Path | None = typer.Option(None, "--tags", help="Query tags: JSON {query_id: [tag, ...] | {field: value}} or TSV 'qid<TAB>tag...'. Adds per-group results."),
    group_by: str | None = typer.Option(None, "--group-by", help="With --tags: group by the values of this field (tags 'field=value'); default: one group per tag."),
    include_zero_gt: bool = typer.Option(False, "--include-zero-gt", help="Score zero-GT queries as 0 in ranking metrics instead of excluding them."),
    set_threshold: float | None = typer.Option(None, "--set-threshold", help="Answer set = items scoring >= this; enables set and reject metrics (empty set = rejection). "
        "With TREC runs, -inf takes each run's list as the answer."),
    mode: str | None = typer.Option(None, "--mode", help="Compose a retrieval mode from per-path files <cond>.II/.TT/.IT/.TI.npy (or II/<cond>.npy ...): I2I, T2T, IT2IT, I2IT, T2IT (any case). "
        "The report records it as its target (meta.mode; MOOR for a 'snapbench moor' folder), which compare reads."),
    conditions: str | None = typer.Option(None, "--conditions", help="Only these condition ids (comma list); clean is always included."),
    allow_unknown_items: bool = typer.Option(False, "--allow-unknown-items", help="Drop (with a warning) qrels gallery ids that are not in gallery_ids.txt instead of failing."),
    table_out: Path | None = typer.Option(None, "--table-out", help="Also write a table: .csv (long, complete) or .md (readable)."),
    export_run: Path | None = typer.Option(None, "--export-run", help="Write each condition's top-k as a TREC run DIR/<condition>.run to re-check with trec_eval/ranx "
        "(they re-break equal scores their own way)."),
    export_depth: int | None = typer.Option(None, "--export-depth", help="Depth of exported runs (default: the depth the metrics rank to: the largest k, or --rbo-depth when rbo is computed, as by default)."),
    primary: str = typer.Option("hit@1", "--primary", help="Metric whose Δ, CI and p the printed table shows."),
    stability_metric: str = typer.Option("hit@1", "--stability-metric", help="hit@k metric for the stability classes (stably correct / drag / persistently wrong / boost)."),
    cliff_tol: float = typer.Option(DEFAULT_CLIFF_TOL, "--cliff-tol", help="Severity-curve rule: drops <= this (metric units) count as no drop."),
    cliff_ratio: float = typer.Option(DEFAULT_CLIFF_RATIO, "--cliff-ratio", help="Severity-curve rule: 'cliff' when the last step's drop exceeds ratio x the earlier drop."),
    workers: int | None = typer.Option(None, "--workers", help="Threads for row blocks (default: min(4, CPUs))."),
    rbo_p: float = typer.Option(DEFAULT_RBO_P, "--rbo-p", help="Persistence p of the label-free rbo (RBO_ext), in (0, 1)."),
    rbo_depth: int = typer.Option(DEFAULT_RBO_DEPTH, "--rbo-depth", help="Depth d the label-free rbo (RBO_ext) is extrapolated from."),
    per_query: bool = typer.Option(False, "--per-query", help="Also store every query's value of every condition and metric "
        "in the JSON report (key per_query), for comparing runs query by query."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
) -> None:
    """Paired evaluation of every condition against clean: metrics, ΔR@k with bootstrap CIs and
    Holm-corrected p-values, severity curves, stability classes, additivity of joint conditions, and
    the label-free stability measures (overlap@k, rbo, flip@1) -- the only ones without --qrels.

    Exit status: 0 when something was measured, 1 when nothing was (no query has a relevant item:
    every value is null; the report is still written), 2 for an error."""
    from .app.evaluate import evaluate_directory
    from .evaluate.config import EvaluationConfig
    from .render.terminal import check_table_path, print_report, write_table
    from .store.atomic import check_output_file
    from .store.rundir import write_report

    # outputs first: a wrong --out or --table-out must not cost a whole evaluation
    if out is not None:
        check_output_file(out, param="out")
    if table_out is not None:
        check_table_path(table_out)
    # the evaluation settings: every value is checked there (errors name the flag)
    cfg = EvaluationConfig(
        ks=k, metrics=metrics, resamples=resamples, permutations=permutations, ci=ci, seed=seed,
        include_zero_gt=include_zero_gt, set_threshold=set_threshold, stability_metric=stability_metric,
        curve_tol=cliff_tol, curve_ratio=cliff_ratio, labelled=qrels is not None,
        **{name: v for name, v in (("workers", workers), ("rbo_p", rbo_p), ("rbo_depth", rbo_depth)) if v is not None},
    )
    if qrels is None and primary == "hit@1":
        primary = "overlap@10" if "overlap@10" in cfg.metric_list() else cfg.metric_list()[0]  # no labels: no hit@1
    _check_chosen_metrics(cfg.metric_list(), primary, stability_metric)
    conds = [c.strip() for c in conditions.split(",") if c.strip()] if conditions else None
    report = evaluate_directory(
        scores_dir, qrels, cfg, mode=mode, conditions=conds, tags=tags, group_by=group_by,
        unknown_items="drop" if allow_unknown_items else "error", export_run=export_run,
        export_depth=export_depth, per_query=per_query,
    )
    for w in report.warnings or []:
        _warn(w)
    if out is not None:
        write_report(report, out)
    if table_out is not None:
        write_table(report, table_out, primary=primary)
    if not quiet:
        print_report(report, primary=primary)
    if out is not None and not quiet:
        typer.echo(f"report written to {out}", err=True)
    if _nothing_measured(report):
        raise typer.Exit(1)


def additivity(
    source: Path = typer.Argument(..., help="A report written by 'snapbench evaluate --out' or 'snapbench run' (RUN/IT2IT/report.json, one per mode), or a SCORES_DIR (with --qrels; without it, the label-free overlap@k, rbo, flip@1 as 'evaluate' gives them)."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Relevance labels, when SOURCE is a SCORES_DIR (without them: label-free measures only)."),
    metric: Optional[str] = typer.Option(
        None, "--metric",
        help="Metric of the table (default: the report's primary: hit@1, SnapBench's R@1, when the report has it, else the label-free overlap@10)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed (SCORES_DIR only)."),
    resamples: int | None = typer.Option(None, "--resamples", help=f"Bootstrap resamples (SCORES_DIR only; default {DEFAULT_RESAMPLES})."),
    ci: float | None = typer.Option(None, "--ci", help=f"CI level (SCORES_DIR only; default {DEFAULT_CI})."),
    mode: str | None = typer.Option(None, "--mode", help="Retrieval mode from per-path files (see 'evaluate --help')."),
    out: Path | None = typer.Option(None, "--out", help="Write the (additivity-only) JSON report (SCORES_DIR only)."),
) -> None:
    """Print the additivity table: Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp with CI per joint pair x
    severity, then the means per pair, per severity and overall (drops = clean − corrupted)."""
    from .render.terminal import print_additivity
    from .store.rundir import read_report, write_report

    if not source.exists():
        raise InputError("no such file or folder (give a report written by 'snapbench evaluate --out' "
                         "or a SCORES_DIR)", path=source)
    if source.is_file():
        given = [f for f, v in (("--resamples", resamples), ("--ci", ci), ("--qrels", qrels), ("--mode", mode),
                                ("--out", out)) if v is not None]
        if seed != DEFAULT_SEED:
            given.insert(0, "--seed")
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise ConfigError(f"{', '.join(given)} {verb} only when recomputing from a SCORES_DIR; {source} is a "
                              "finished report (its CIs were computed with its own settings)")
        report = read_report(source)
        if metric is None:  # the report's primary: a label-free report has no hit@1
            from .render.aggregate import headline_metric

            metric = headline_metric(report.metrics)[0]
        if metric not in report.metrics:
            raise InputError(f"metric {metric!r} is not in the report {source}{hint_and_known(metric, report.metrics)}",
                             param="metric")
    else:
        _refuse_a_run_folder(source)
        if metric is None:  # evaluate's primary: hit@1 with --qrels, else the label-free overlap@10
            from .evaluate.config import EvaluationConfig
            from .render.aggregate import headline_metric

            metric = headline_metric(EvaluationConfig(labelled=qrels is not None).metric_list())[0]
        report = _additivity_report(source, qrels, metric, seed, resamples, ci, mode)
        for w in report.warnings or []:
            _warn(w)
        if out is not None:
            write_report(report, out)
    print_additivity(report, metric=metric)
    sys.stdout.flush()


def _additivity_report(source: Path, qrels: Path | None, metric: str, seed: int, resamples: int | None, ci: float | None,
                       mode: str | None):
    """Evaluate only the joint conditions and the parts of them that have score files: a missing part
    is then named as what it is (no score file), never as "not selected"."""
    from .app.evaluate import evaluate_directory
    from .evaluate.config import EvaluationConfig
    from .store.scores import ScoresDir

    given = {name: v for name, v in (("resamples", resamples), ("ci", ci)) if v is not None}
    try:
        cfg = EvaluationConfig(metrics=metric, permutations=0, seed=seed, labelled=qrels is not None, **given)
        cfg.metric_list()  # a labelled metric without --qrels is refused here, as --metric (the rest: evaluate's defaults)
    except ConfigError as exc:  # the metric list is additivity's one --metric
        if exc.param != "metrics":
            raise
        raise ConfigError(exc.problem, path=exc.path, param="metric") from None
    sd = ScoresDir(source, mode=mode)
    joints = [parse_condition(c) for c in sd.conditions if parse_condition(c).kind == "joint"]
    parts = {p.id for j in joints for p in (j.image_part, j.text_part) if p is not None}
    need = [c for c in sd.conditions if c in parts or parse_condition(c).kind == "joint"]
    return evaluate_directory(source, qrels, cfg, mode=mode, conditions=need or ["clean"])


def _refuse_a_run_folder(source: Path) -> None:
    """A folder 'snapbench run' wrote holds finished reports, one per mode: name them instead of asking
    for the --qrels of a SCORES_DIR it is not."""

    if output_kind(source) != "run":
        return  # the SCORES_DIR reader says what is wrong (and what another command's folder is)
    rd = RunDir(source)
    reports = [rd.report(t).relative_to(source).as_posix() for t in rd.targets()]
    if not reports:
        raise InputError("is a 'snapbench run' folder without reports (finish the run first), not a SCORES_DIR",
                         path=source)
    first = next((r for r in reports if r == rd.report("IT2IT").relative_to(source).as_posix()), reports[0])
    more = f" and {len(reports) - 8} more" if len(reports) > 8 else ""
    raise InputError(f"is a 'snapbench run' folder, not a SCORES_DIR: give one of its reports, e.g. {source / first} "
                     f"(it has {', '.join(reports[:8])}{more})", path=source)


def moor(
    out: Path = typer.Option(..., "--out", "-o", help="Output SCORES_DIR (created if missing)."),
    q_image: Path | None = typer.Option(None, "--q-image", help="Query image embeddings (Q x d)."),
    q_text: Path | None = typer.Option(None, "--q-text", help="Query text embeddings (Q x d)."),
    g_image: Path | None = typer.Option(None, "--g-image", help="Gallery image embeddings (N x d)."),
    g_text: Path | None = typer.Option(None, "--g-text", help="Gallery text (caption) embeddings (N x d)."),
    paths_dir: Path | None = typer.Option(None, "--paths-dir", help="Folder of path score matrices (see below)."),
    embeddings_dir: Path | None = typer.Option(None, "--embeddings-dir", help="Folder of per-condition query embeddings + the gallery's (see below); one fit for all conditions."),
    condition: str = typer.Option("clean", "--condition", help="Condition id of the embedding input, e.g. clean or img/motion_blur/s2 (output file stem, '/' as '__')."),
    query_ids: Path | None = typer.Option(None, "--query-ids", help="query_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else q0, q1, ...)."),
    gallery_ids: Path | None = typer.Option(None, "--gallery-ids", help="gallery_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else g0, g1, ...)."),
    no_whiten: bool = typer.Option(False, "--no-whiten", help="Skip gallery-side whitening (only L2-normalise)."),
    gate: str = typer.Option("bell", "--gate", help="Gate: bell, linear, sigmoid, inverse_bell, pure_r2, none."),
    topk: int | None = typer.Option(None, "--topk", help="Write a top-K TREC run per condition instead of dense scores (evaluate then flags metrics deeper than K)."),
    chunk_size: int = typer.Option(8192, "--chunk-size", help="Gallery rows per chunk (streaming fit and top-k)."),
    ann: bool = typer.Option(False, "--ann", help="With --topk: FAISS HNSW approximate search (needs snapbench[ann])."),
    ann_check: int | None = typer.Option(None, "--ann-check", help="With --ann: queries per condition (sampled, seeded) whose exact top-K measures the ANN top-K overlap (default 256); 0 skips it."),
    dtype: str = typer.Option("float64", "--dtype", help="float64 (exact) or float32 (faster scoring)."),
    weights_format: str = typer.Option("csv", "--weights-format", help="csv (with query ids) or npy (Q x 4)."),
    fusion_eps: float = typer.Option(1e-6, "--fusion-eps", help="Σw below this falls back to s_II."),
) -> None:
    """Apply MOOR (whitening, four paths, Bell gate, variance weights) to embeddings or path scores."""
    from .app.moor import DEFAULT_ANN_CHECK, FuseOptions, fuse_directory
    from .render.console import stderr_console

    emb = [q_image, q_text, g_image, g_text]
    given = [n for n, v in (("the embedding files", any(e is not None for e in emb)), ("--paths-dir", paths_dir),
                            ("--embeddings-dir", embeddings_dir)) if v]
    if len(given) > 1:
        raise ConfigError(f"give one input: {' or '.join(given)}, not several")
    if not given or (given == ["the embedding files"] and not all(e is not None for e in emb)):
        missing = [n for n, e in zip(("--q-image", "--q-text", "--g-image", "--g-text"), emb) if e is None]
        raise ConfigError(f"missing {', '.join(missing)} (or use --embeddings-dir or --paths-dir)")
    if embeddings_dir is not None and condition != "clean":
        raise ConfigError("--condition names the single condition of --q-image/--q-text; --embeddings-dir takes the names from its files")
    if ann_check is not None and not ann:
        raise ConfigError("--ann-check measures the overlap of --ann with exact MOOR; add --ann (and --topk K)")
    with stderr_console().status("moor: fusing"):  # a spinner while it works; a line per fused condition
        summary = fuse_directory(
            out, embeddings_dir=embeddings_dir, paths_dir=paths_dir,
            embeddings=emb if given == ["the embedding files"] else None,
            condition=condition, query_ids=query_ids, gallery_ids=gallery_ids, progress=typer.echo,
            options=FuseOptions(whiten=not no_whiten, gate=gate, k=topk, chunk_size=chunk_size, ann=ann,
                                ann_check=DEFAULT_ANN_CHECK if ann_check is None else ann_check, dtype=dtype,
                                weights_format=weights_format, fusion_eps=fusion_eps),
        )
    for fname in summary.default_ids:
        typer.echo(f"warning: no {fname} given or found: wrote positional ids ({fname[0]}0, {fname[0]}1, ...) "
                   f"to {out / fname}; qrels must use them", err=True)
    typer.echo(f"wrote {out}")


def preview(
    image: Path = typer.Argument(..., help="Image file (JPEG/PNG/WebP/BMP/TIFF)."),
    out: Path = typer.Option(Path("sheet.png"), "--out", help="Contact sheet to write (PNG; an existing sheet is replaced)."),
    question: Optional[str] = typer.Option(None, "--question", help="Also show the 8 corrupted questions."),
    entity: Optional[str] = typer.Option(None, "--entity", help="Entity word of the question (targets the text operators)."),
    seed: int = typer.Option(0, "--seed", help="Global seed (as in corrupt)."),
    grid: _Grid = None,
    query_id: Optional[str] = typer.Option(
        None,
        "--id",
        "--key",
        help=(
            "Query id keying the randomness, as in corrupt: with the same id and --seed the variants are "
            "exactly those corrupt writes for that query (default: the file name without extension)."
        ),
    ),
    max_pixels: int = typer.Option(DEFAULT_MAX_PIXELS, "--max-pixels", help="Largest image (width x height) to load."),
    severity_target: _severity_target(
        "Show s1, s2, ... at a measured strength, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (as corrupt makes them).") = None,
    no_measure: bool = typer.Option(False, "--no-measure", help="Do not measure the variants (no SSIM/PSNR in the labels)."),
) -> None:
    """Write a contact sheet: clean + 15 operators x 3 severities, labelled with their measured SSIM and PSNR;
    questions and measured values printed too."""
    from .corruptions.io import load_image
    from .corruptions.preview import contact_sheet
    from .corruptions.target import parse_severity_target
    from .store.atomic import check_output_file, save_png

    if out.suffix.lower() != ".png":
        raise ConfigError(f"must be a .png file, got {out}", param="out")
    check_output_file(out, param="out")
    key = query_id if query_id is not None else image.stem
    img = load_image(image, max_pixels=positive_int(max_pixels, "max_pixels"))
    target = parse_severity_target(severity_target)
    sheet = contact_sheet(img, question=question, entity=entity, seed=seed, key=key, grid=grid, measure=not no_measure,
                          severity_target=target)
    save_png(out, sheet.image)
    for line in sheet.lines:
        typer.echo(line)
    _print_measured(sheet)
    h, w = sheet.image.shape[:2]
    typer.echo(f"seed key (query id): {key}{'' if query_id is not None else ' (the file name; use --id to match a manifest id)'}  seed: {seed}")
    typer.echo(f"wrote {out} ({w}x{h})")


def _print_measured(sheet) -> None:
    """One line per image condition: measured SSIM, PSNR, changed share (and the target's outcome)."""
    if not sheet.measured:
        return
    typer.echo(f"{'condition':28s} {'ssim':>8s} {'psnr':>8s} {'changed':>8s}" + ("  target" if sheet.targets else ""))
    for cid, m in sheet.measured.items():
        ssim = "-" if m.get("ssim") is None else f"{m['ssim']:.4f}"
        psnr = "inf" if m.get("psnr") is None else f"{m['psnr']:.2f}"
        line = f"{cid:28s} {ssim:>8s} {psnr:>8s} {m['changed']:>8.4f}"
        t = sheet.targets.get(cid)
        if t is not None:
            knob = "" if t["knob"] is None else f" ({t['knob']} {t['knob_value']:.6g})"
            line += f"  {t['metric']} {t['value']:g}: {'reached' if t['reached'] else 'not reached'}{knob}"
        typer.echo(line)


def report(
    run_dir: Path = typer.Argument(..., help="Run directory (DIR/<MODE>/report.json, DIR/MOOR/..., DIR/run.json)."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: the run directory)."),
    formats: str = typer.Option(
        _FORMATS, "--formats",
        help="Comma-separated outputs: html (report.html), md/tex (tables/), csv/parquet (per_query.*), "
             "png/pdf (figures/; need the 'report' extra)."),
    metric: str = typer.Option("hit@1", "--metric", help="Metric of tables, figures and findings (hit@1 = SnapBench R@1)."),
    dpi: _Dpi = 120,
    traffic: Path | None = typer.Option(
        None, "--traffic", help="A 'snapbench diagnose' output folder: write traffic.json (expected R@k under that "
                                "traffic mix) into the run folder, or into --out when given (the run is left "
                                "untouched), and show it in the report."),
) -> None:
    """Write report.html, tables/*.md|tex, figures/*.png|pdf, per_query.csv|parquet and findings.json.

    Optional inputs (per-query values, MOOR's text share, fusion baselines, run.json, a contact
    sheet) that are missing are named in the report, never fatal.
    """
    from .render import build_report
    from .render.console import stderr_console

    err = stderr_console()
    if traffic is not None:
        from .app.traffic import write_traffic

        elsewhere = out is not None and out.resolve() != run_dir.resolve()
        if elsewhere:  # the report's folder first (a run to read, then never another command's folder)
            from .store import claim_output_dir, open_run_dir

            open_run_dir(run_dir)
            claim_output_dir(out, "report")
        typer.echo(f"traffic: {write_traffic(run_dir, traffic, out_dir=out if elsewhere else None)}")
    fmts = [f.strip().lower() for f in formats.split(",") if f.strip()]
    with err.status("building report") as status:
        res = build_report(run_dir, out, formats=fmts, metric=metric, dpi=dpi,
                           progress=lambda msg: status.update(f"report: {msg}"))
    for topic, msgs in res.notes.items():
        for m in msgs:
            err.print(f"note ({topic}): {m}", highlight=False, markup=False)
    for warning in res.warnings:
        _warn(warning)
    html = RunDir(res.out).report_html
    typer.echo(f"wrote {len(res.files)} files under {res.out}" + (f"; open {html}" if html in res.files else ""))


def run(
    dataset: Path = typer.Argument(..., help="Dataset: snap_bench.json, a PhotoBench folder, an ImageFolder copy, or a JSONL query manifest (with --gallery/--qrels) or a folder holding queries.jsonl, gallery.jsonl, qrels.json."),
    encoder: list[str] = typer.Option(
        ..., "--encoder", "-e", metavar="SPEC",
        help="Encoder spec: toy, sentence-transformers:NAME_OR_PATH, hf:NAME_OR_PATH, open_clip:ARCH[:PRETRAINED], or "
             "package.module:attribute. Repeat it to run several encoders on one corruption pass (OUT/<name>/ each).",
    ),
    out: Path = typer.Option(..., "--out", help="Output folder (reports per mode, MOOR, report.html); rerun to resume."),
    name: Optional[list[str]] = typer.Option(
        None, "--name", metavar="NAME",
        help="With several --encoder: the folder name of each, in order (default: derived from the spec). Needed to give one spec twice.",
    ),
    format: Optional[str] = typer.Option(None, "--format", help="Force the dataset format (snapbench-json, hf-imagefolder, photobench, jsonl); default: detected."),
    images: Optional[Path] = typer.Option(None, "--images", help="Folder holding the dataset's images when they are not next to it."),
    gallery: _Gallery = None,
    qrels: _Qrels = None,
    modes: Optional[str] = typer.Option(None, "--modes", help="Comma-separated modes among I2I, T2T, IT2IT, I2IT, T2IT (default: all the data and model allow)."),
    conditions: Optional[str] = typer.Option(
        None, "--conditions",
        help="Comma-separated condition ids, run exactly (plus the parts of joint ids; default: the 54 states and the 18 joint conditions).",
    ),
    joint: Optional[bool] = typer.Option(
        None, "--joint/--no-joint",
        help="Add the paper's 18 joint image+text conditions (default: yes, unless --conditions lists the conditions to run).",
    ),
    variants: str = typer.Option(_DEFAULT.variants, "--variants", help="generated (snapbench's seeded operators) or released (the variants the dataset ships)."),
    seed: _Seed = _DEFAULT.seed,
    device: _Device = None,
    batch_size: _BatchSize = _DEFAULT.batch_size,
    workers: int = typer.Option(_DEFAULT.workers, "--workers", help="Parallel corruption tasks while the encoder runs: processes (local), CPUs of a local Ray instance, or tasks at once on a Ray cluster."),
    engine: str = typer.Option(_DEFAULT.engine, "--engine", help=f"Where queries are corrupted: {' or '.join(ENGINES)} (local: a process pool; ray: needs snapbench[ray])."),
    actors: int = typer.Option(_DEFAULT.encoder_actors, "--actors", help="With --engine ray: encode on this many Ray actors (one model load each, a GPU each when the cluster has them); 0 = encode in this process."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster to use with --engine ray (auto, or ray://HOST:10001); default: start a local Ray with --workers CPUs."),
    resamples: _Resamples = _DEFAULT.resamples,
    k: _Ks = ",".join(map(str, _DEFAULT.ks)),
    group_by: Optional[str] = typer.Option(None, "--group-by", help="Also report per value of this query field (e.g. domain, source)."),
    grid: _Grid = None,
    cache_dir: _CacheDir = None,
    no_cache: _NoCache = False,
    force: _Force = False,
    no_report: bool = typer.Option(False, "--no-report", help="Skip the HTML/markdown/LaTeX report."),
    no_progress: _NoProgressBars = False,
    block_queries: int = typer.Option(_DEFAULT.block_queries, "--block-queries", hidden=True, help="Queries per resume checkpoint."),
    traffic: Optional[Path] = typer.Option(
        None, "--traffic", help="A 'snapbench diagnose' output folder: also write OUT/traffic.json (expected R@k under that traffic mix), shown in the report."),
    severity_target: _severity_target(
        "Make s1, s2, ... a measured strength per image, e.g. ssim=0.90,0.75,0.60 or psnr=30,25,20 (one value per grid "
        "level, s1 first, each lower than the one before; each operator's knob searched per image, as in corrupt).") = None,
    no_measure: bool = typer.Option(False, "--no-measure", help="Leave out the per-query rows psnr, ssim, drift_image, drift_text (measured damage)."),
    gallery_shard_rows: Optional[int] = typer.Option(
        None, "--gallery-shard-rows",
        help="For galleries in the millions: keep the gallery embeddings as shards of N items (resumable per shard) and score shard by shard (no fixed-fusion baselines).",
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", metavar="N",
        help="Evaluate the first N queries only: a quick look before a long run (said on the terminal, in run.json and in the report)."),
    quiet: _QuietRun = False,
) -> None:
    """Run the whole paired evaluation: load -> corrupt -> encode -> score -> fuse -> evaluate -> report.

    Writes OUT/<MODE>/report.json for each evaluated mode (I2I, T2T, IT2IT, I2IT, T2IT), OUT/MOOR/report.json,
    fixed-fusion baselines under OUT/fusion/, and OUT/report.html. A killed run resumes where it stopped.
    With several --encoder, OUT/<name>/ holds each encoder's run (the same files).

    When it is done it prints, per target, the clean R@1 and nDCG@10, the mean ΔR@1 over the corrupted
    conditions the target reads with its CI, the worst and mildest operators, δ (joint conditions) and MOOR
    against the best fixed fusion: the numbers of OUT/headline.json.  Without labels: the label-free
    overlap@10, rbo and flip@1 instead.
    """
    from .app.stages import run_benchmark, run_encoders
    from .core.validate import comma_list, int_list
    from .corruptions.target import parse_severity_target

    if name and len(encoder) == 1:
        raise ConfigError("names the folders of a run of several encoders; with one encoder, OUT is the run folder",
                          param="name")
    opts = RunOptions(
        modes=comma_list(modes, "modes"), conditions=comma_list(conditions, "conditions"), joint=joint,
        variants=variants, seed=seed, grid=grid, device=device, batch_size=batch_size, workers=workers, engine=engine,
        address=address, encoder_actors=actors, resamples=resamples, ks=int_list(k, "ks"), group_by=group_by,
        cache_dir=cache_dir, use_cache=False if no_cache else None, dataset_format=format, images=images, qrels=qrels,
        gallery=gallery, force=force, report=not no_report, progress=not (no_progress or quiet), block_queries=block_queries,
        gallery_shard_rows=gallery_shard_rows, traffic=traffic, measure=not no_measure,
        severity_target=parse_severity_target(severity_target), limit=limit,
    )
    if len(encoder) == 1:
        res = run_benchmark(dataset, encoder[0], out, opts, log=_logger(quiet))
        if quiet:
            _paths(res)
        else:
            _summary(res)
    else:
        _several(run_encoders(dataset, encoder, out, opts, names=name, log=_logger(quiet)), out, quiet)


def _several(result, out: Path, quiet: bool = False) -> None:
    for folder, res in result.runs.items():
        if quiet:
            _paths(res)
            continue
        typer.echo(f"{folder}:")
        _summary(res, title=f"snapbench run: {folder}")
    if not quiet:
        from .render.aggregate import read_headline
        from .render.terminal import uneven_conditions_note

        note = uneven_conditions_note({folder: read_headline(res.out_dir) for folder, res in result.runs.items()
                                       if RunDir(res.out_dir).headline.is_file()})
        if note:
            typer.echo(note)
        typer.echo(f"{len(result.runs)} encoders, one corruption pass, {result.elapsed_s:.1f} s -> {out}")


def _logger(quiet: bool = False):
    if quiet:
        return lambda msg: None
    return lambda msg: typer.echo(msg, err=True)


def _paths(result) -> None:
    """--quiet: the result files, one path per line (what a script reads next)."""

    for path in result.reports.values():
        typer.echo(str(path))
    for path in (RunDir(result.out_dir).headline, result.html):
        if path is not None and Path(path).is_file():
            typer.echo(str(path))


def _summary(result, title: str = "snapbench run") -> None:
    done = "complete already, read back" if result.reused else f"{result.elapsed_s:.1f} s"
    typer.echo(
        f"{result.n_queries} queries x {len(result.conditions)} conditions vs {result.n_gallery} gallery items; "
        f"modes: {', '.join(result.modes)}; {len(result.dropped)} dropped; {done}"
    )
    if result.target_outcome is not None:
        from .corruptions.target import target_summary
        from .render.damage import TARGET_FLAGGED

        typer.echo(target_summary(result.target_outcome, TARGET_FLAGGED))
    width = max(map(len, result.reports), default=0)
    for target, path in result.reports.items():
        typer.echo(f"  {target:{width}s}  {path}")
    if RunDir(result.out_dir).headline.is_file():  # the headline table, read back: the numbers the file holds
        from .render.aggregate import read_headline
        from .render.terminal import headline_table, results_console

        results_console().print(headline_table(read_headline(result.out_dir), title=title))
    if result.html is not None:
        typer.echo(f"report: {result.html}")


def stress(
    dataset: Annotated[Path, typer.Argument(help="A PhotoBench folder (album*/ folders, one album, or a Hugging Face copy with --split), or a JSONL query manifest / folder holding queries.jsonl, gallery.jsonl, qrels.json.")],
    encoder: _Encoder,
    out: Path = typer.Option(..., "--out", help="Output folder: records/<condition>.jsonl, per_query.csv, stress.json, report.html; rerun to resume."),
    stress: str = typer.Option(..., "--stress", help="Required (no default): the stress conditions to run, comma-separated: operators (caption_truncate=F, ocr_dropout=P, location_sparsify=P, time_dropout=P, face_dropout=P, owner_face_dropout=P, drop=FIELD, caption_swap), combined with '+', or presets (combined-mild, faces-mild)."),
    k: _Ks = ",".join(map(str, DEFAULT_KS)),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the stress operators and the bootstrap."),
    resamples: _Resamples = DEFAULT_RESAMPLES,
    resample_by: str = typer.Option("album", "--resample-by", help="album (PAL-Bench's user-level bootstrap; needs at least 10 albums, else queries are resampled and the report says so) or query."),
    record_template: Optional[str] = typer.Option(None, "--record-template", help="Template of the text indexed per record, e.g. '[{caption}.] [Place: {place}.]' (default: caption, OCR, time words, place, people; see docs/albums.md)."),
    split: Optional[str] = typer.Option(None, "--split", help="Hugging Face PhotoBench copy: the query file of protected/album*/ (validation, test, query)."),
    language: str = typer.Option("en", "--language", help="PhotoBench: the queries' language, en (query_en) or cn (query_cn)."),
    gallery: _Gallery = None,
    qrels: _Qrels = None,
    set_threshold: Optional[float] = typer.Option(None, "--set-threshold", help="Score that admits a record into a query's answer set: adds the reject metrics (zero-GT queries) under stress."),
    device: Optional[str] = typer.Option(None, "--device", help="Encoder device (default: cuda when available, else cpu)."),
    batch_size: _BatchSize = None,
    force: _Force = False,
    no_report: bool = typer.Option(False, "--no-report", help="Skip report.html."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not print progress lines."),
    quiet: _QuietStress = False,
) -> None:
    """Perturb only the gallery records' fields and report paired deltas against the clean records.

    Each query searches only its own album; results per album, micro (over queries) and macro (over albums).
    --stress is required: the conditions to run, e.g. --stress combined-mild,drop=location.
    Writes OUT/records/<condition>.jsonl, OUT/per_query.csv, OUT/stress.json and OUT/report.html.
    """
    from .albums.records import DEFAULT_TEMPLATE
    from .app.stress import StressOptions, run_stress
    from .core.validate import int_list

    opts = StressOptions(stress=stress, ks=int_list(k, "ks"), seed=seed, resamples=resamples, resample_by=resample_by,
                         template=record_template if record_template is not None else DEFAULT_TEMPLATE, split=split,
                         language=language, gallery=gallery, qrels=qrels, set_threshold=set_threshold, device=device,
                         batch_size=batch_size, force=force, report=not no_report,
                         progress=not (no_progress or quiet))
    log = None if no_progress or quiet else (lambda m: typer.echo(m, err=True))
    res = run_stress(dataset, encoder, out, opts, log=log)
    if quiet:
        from .store.folders import StressDir

        sd = StressDir(res.out)
        for path in (sd.stress_json, sd.per_query, res.html):
            if path is not None:
                typer.echo(str(path))
        return
    s = res.summary
    typer.echo(f"{res.n_queries} queries in {len(res.albums)} album(s), {res.n_records} records; "
               f"{len(res.conditions) - 1} stress condition(s); {res.elapsed_s:.1f} s -> {out}")
    from .render.stress import stress_findings

    for _id, sentence in stress_findings(s):
        typer.echo(f"  {sentence}")
    for n in s["notes"]:
        typer.echo(f"note: {n}", err=True)
    if res.html is not None:
        typer.echo(f"report: {res.html}")


moor.__doc__ = (moor.__doc__ or "") + "\n\n" + _EPILOG


for _name, _command in (
    ("conditions", conditions),
    ("corrupt", corrupt),
    ("preview", preview),
    ("encode", encode),
    ("evaluate", evaluate),
    ("additivity", additivity),
    ("moor", moor),
    ("run", run),
    ("report", report),
    ("compare", compare),
    ("diagnose", diagnose),
    ("demo", demo),
    ("stress", stress),
):
    app.command(_name, cls=Command)(guarded(_command))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
