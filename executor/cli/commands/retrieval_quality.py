"""Measuring retrieval: `calibrate` fits the grading model, `eval-retrieval` reports how grades hold."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path
from typing import Annotated

import typer

from evals.quality_report import quality_table, write_markdown
from executor.cli.commands.common import JsonOpt, KbsOpt, config_to_write, console, output_file, print_json, runtime
from executor.cli.commands.common import pair_labels as _pair
from executor.core.errors import InputError

LabelsOpt = Annotated[
    list[Path],
    typer.Option("--labels", help="YAML list of {query, relevant: [doc_key, ...]}; repeat for several files"),
]


def _observe(pairs, source_kind: str, feedback_kbs: Sequence[str] = (), generated_for: str | None = None):
    """Grade every labelled question once (label files, then users' feedback on the given KBs, then with
    `generated_for` that KB's self-calibration evidence); the runtime is closed before the figures are computed.
    Returns (observed, sources, each KB's thresholds, embedder name)."""
    from executor.retrieval.calibration import Label, load_labels, observe
    from executor.stores.feedback import FeedbackStore, labels_from_feedback

    loaded = [(str(path), kb, load_labels(path)) for path, kb in pairs]  # every file checked before any search
    files = {source for source, _, _ in loaded}
    # a bar on a terminal, as ingest shows: a team's labels can take hours. On stderr, so --json's stdout stays
    # clean even when a terminal watches the run (`--json > out.json`)
    progress = sys.stderr.isatty()
    with runtime(source_kind) as rt:
        for kb in feedback_kbs:
            # only answers someone called good name relevant documents; a bad answer says what is not
            # relevant but not whether the KB could answer, so it is no off-topic label either
            found = [
                Label(query=f["query"], relevant=f["relevant"])
                for f in labels_from_feedback(FeedbackStore(rt.db).rows(kb=kb))
                if f["relevant"]
            ]
            if found:
                loaded.append((f"feedback on {kb}", kb, found))
        observed, sources, thresholds = [], {}, {}
        for source, kb, labels in loaded:
            # each KB graded the way its lookups are (`knowledge_base.grading`), with the entities it is aligned to
            if kb not in thresholds:  # one catalog read per KB, not per label file
                thresholds[kb] = rt.settings.kb_thresholds(rt.embedder.name, rt.catalog.require_ingested(kb))
            if source in files:  # every file checked before any question is graded
                _check_documents(source, kb, labels, rt.catalog.documents(kb), fitting=source_kind == "calibrate")
        for source, kb, labels in loaded:
            observed += observe(
                rt.grader, rt.catalog, rt.embedder, kb, labels, thresholds[kb], rt.known_entities, progress
            )
            sources[source] = len(labels)
        if generated_for is not None:
            observed += _generated(rt, generated_for, sources, progress)
        return observed, sources, thresholds, rt.embedder.name


def _check_documents(source: str, kb: str, labels, documents, fitting: bool) -> None:
    """One stderr line when a label file names documents the KB does not hold (a typo, another KB's labels, a
    page removed since): no answer can be one of them, so every figure on those questions is a miss, reported
    as the KB's own (`hit@1 0.00` for a label file with a misspelt folder) without a word. When `fitting`, a file
    none of whose documents the KB holds is refused: each of its questions would be fitted as one whose every
    result is wrong (a shared preset's HIGHLY_RELEVANT threshold went 0.27 -> 0.98 on one, hostile23 finding 5)."""
    from executor.core.errors import warn

    named = {key for label in labels for key in label.relevant}
    unknown = sorted(named - documents.keys())
    if not unknown:
        return
    more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
    shown = ", ".join(repr(key) for key in unknown[:3]) + more
    if fitting and len(unknown) == len(named):
        raise InputError(
            f"{source}: none of its {len(unknown)} relevant document(s) is in knowledge base {kb!r} ({shown}), so "
            f"nothing can be fitted on it: a key is a document's path under the KB's source folder (`executor kb show "
            f"{kb}`), and the file goes with the --kb it was written for"
        )
    warn(
        f"{source}: {len(unknown)} relevant document(s) are not in knowledge base {kb!r}, so no answer can "
        f"match them: {shown}"
    )


def _generated(rt, kb: str, sources: dict[str, int], progress: bool) -> list:
    """The human labels go on top of the KB's own evidence (executor/retrieval/self_calibration.py): its generated and
    off-topic questions add training pairs to the ranker and the answerability model, tagged as another KB's so
    that the thresholds and the figures stay on the team's own questions."""
    from dataclasses import replace

    from executor.retrieval.self_calibration import evidence

    row = rt.catalog.require(kb)
    if not rt.settings.self_calibrate or rt.settings.grading_of(row.grading) != "ranker":
        return []
    found = evidence(
        rt.grader, rt.catalog, rt.embedder, kb, rt.settings.thresholds(rt.embedder.name, "ranker"), progress=progress
    )
    answerable = sum(1 for o in found if o.label.relevant)
    sources[f"generated from {kb}'s documents"] = answerable
    sources["bundled off-topic pool"] = len(found) - answerable
    return [replace(o, kb=f"{kb} (generated)") for o in found]


def eval_retrieval(
    labels: LabelsOpt,
    kb: KbsOpt = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="also write the table as Markdown here")] = None,
    as_json: JsonOpt = False,
):
    """Grade labelled questions (a fresh session each, nothing stored) and report how the grades hold."""
    from executor.retrieval.calibration import regrade
    from executor.retrieval.quality import measure

    output_file("--markdown", markdown)
    observed, sources, t, embedder = _observe(_pair(labels, kb), "eval")
    quality = measure(regrade(observed, t))
    if markdown is not None:
        write_markdown(markdown, {"": quality})
    if as_json:
        print_json(
            {
                "embedder": embedder,
                "labels": sources,
                **quality.model_dump(),
                "questions": [q.model_dump() for q in quality.questions],
            }
        )
        return
    console.print(quality_table(f"{embedder}: " + ", ".join(sources), {"": quality}))


def calibrate(
    labels: Annotated[
        list[Path] | None,
        typer.Option("--labels", help="YAML list of {query, relevant: [doc_key, ...]}; repeat for several files"),
    ] = None,
    kb: KbsOpt = None,
    for_kb: Annotated[
        str | None,
        typer.Option(
            "--for",
            help="fit this KB's own model (thresholds and figures on its questions; the other labels only help fit "
            "the ranker); default: the KB when every label file is on one KB, else the embedder's shared preset",
        ),
    ] = None,
    shared: Annotated[
        bool,
        typer.Option(
            "--shared", help="fit the embedder's shared preset (config.yaml) even when every label file is on one KB"
        ),
    ] = False,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="store the result: a KB's own model in the catalog (used by that KB's lookups only), the shared "
            "preset in config.yaml for this embedder",
        ),
    ] = False,
    reset: Annotated[
        bool,
        typer.Option(
            "--reset", help="drop the own model of the KB given with --kb (it goes back to the shared preset)"
        ),
    ] = False,
    feedback: Annotated[
        list[str] | None,
        typer.Option(
            "--feedback",
            help="also learn from users' good/bad answers on this KB (executor feedback); repeat for several",
        ),
    ] = None,
    as_json: JsonOpt = False,
):
    """Fit the grading model and thresholds for the active embedder from labelled questions (k-fold figures)."""
    if reset:
        return _reset(labels, kb, for_kb, write, as_json)
    if not labels:
        raise InputError("give --labels FILE (with --kb NAME), or --reset --kb NAME")
    if shared and for_kb:
        raise InputError("--for KB fits that KB's own model, --shared the embedder's shared one: give one of them")
    pairs = _pair(labels, kb)
    target = None if shared else for_kb or (pairs[0][1] if len({k for _, k in pairs}) == 1 else None)
    if target is not None and target not in {k for _, k in pairs} and not feedback:
        raise InputError(f"--for {target}: no --labels file is on that KB")
    if write and target is None:  # the shared preset goes into the config file
        config_to_write()
    from executor.core.settings import Thresholds, config_path, get_settings
    from executor.retrieval.calibration import calibrate as run_calibration
    from executor.retrieval.calibration import kb_model, write_thresholds

    observed, sources, current, embedder = _observe(pairs, "calibrate", feedback or [], target)
    result = run_calibration(observed, sources, current, embedder, target=target, progress=sys.stderr.isatty())
    # what --write replaces: the KB's grading in force, or the embedder's shared ranker
    replaced = current[target] if target is not None else get_settings().thresholds(embedder, "ranker")
    written = None
    if write and target is not None:
        written = _write_kb_model(target, kb_model(result, replaced.max_l2_distance, _now()))
    elif write:
        write_thresholds(
            config_path(),
            result.embedder,
            Thresholds(
                max_l2_distance=replaced.max_l2_distance,
                highly_relevant_threshold=result.highly_relevant_threshold,
                reference_threshold=result.reference_threshold,
                supplement_threshold=result.supplement_threshold,
                ranker=result.ranker,
                answerability=result.answerability,
                highly_relevant_other_language_threshold=result.highly_relevant_other_language_threshold,
            ),
        )
        written = str(config_path())
    if as_json:
        print_json(result.model_dump() | {"written_to": written})
        return
    what = f"knowledge base {target}'s own model" if target else "the shared preset"
    console.print(
        quality_table(
            f"{result.embedder}: {what}, {sum(sources.values())} questions, {result.folds}-fold",
            {"before": result.current, "held-out": result.held_out},
        )
    )
    console.print(f"rule: {result.rule}", highlight=False, markup=False)
    other = result.highly_relevant_other_language_threshold
    console.print(
        f"HIGHLY_RELEVANT {replaced.highly_relevant_threshold:.2f} -> {result.highly_relevant_threshold:.2f}"
        + (f" (best document in another language: {other:.2f})" if other is not None else "")
        + ", "
        f"REFERENCE {replaced.reference_threshold:.2f} -> {result.reference_threshold:.2f}, "
        f"supplements {replaced.supplement:.2f} -> {result.supplement_threshold:.2f} "
        f"(before: {'the model' if replaced.ranker else 'similarity'}; after: the model's probability)",
        highlight=False,
        markup=False,
    )
    console.print(
        "model: "
        + ", ".join(f"{k} {v:+.2f}" for k, v in result.ranker.weights.items())
        + f", bias {result.ranker.bias:+.2f}",
        highlight=False,
        markup=False,
    )
    gate = result.answerability
    console.print(
        "answerability: "
        + (
            ", ".join(f"{k} {v:+.2f}" for k, v in gate.weights.items())
            + f", bias {gate.bias:+.2f}; nothing found below {gate.threshold:.4f}"
            if gate
            else "none (no off-topic labels on the KB it is for): REFERENCE decides nothing found"
        ),
        highlight=False,
        markup=False,
    )
    if written:
        console.print(f"written to {written}", highlight=False, markup=False)


def _now() -> str:
    from datetime import datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_kb_model(kb: str, model) -> str:
    """Store a KB's own model in its catalog row; only a KB graded by the ranker can use one."""
    with runtime("calibrate") as rt:
        row = rt.catalog.require(kb)
        grading = rt.settings.grading_of(row.grading)
        if grading != "ranker":
            raise InputError(
                f"knowledge base {kb!r} is graded by {grading}; its own model would not be used "
                f"(re-ingest it with --grading ranker first)"
            )
        rt.catalog.set_grading_model(kb, model.model_dump(mode="json", by_alias=False))
    return f"the catalog (knowledge base {kb})"


def _reset(labels, kbs, for_kb, write, as_json) -> None:
    names: list[str] = list(dict.fromkeys([*(kbs or []), *([for_kb] if for_kb else [])]))
    if labels or write or len(names) != 1:
        raise InputError("--reset takes one --kb NAME and no --labels or --write")
    with runtime("calibrate") as rt:
        row = rt.catalog.require(names[0])
        had = row.grading_model is not None
        ranked = rt.settings.grading_of(row.grading) == "ranker"
        if had:
            rt.catalog.set_grading_model(names[0], None)
    if as_json:
        print_json({"kb": names[0], "grading_model": None, "dropped": had})
        return
    if not had:  # it said "dropped" of a model that was never there, and of a KB graded by similarity
        line = f"knowledge base {names[0]} has no own grading model; nothing to drop"
    elif ranked:
        line = (
            f"knowledge base {names[0]}: own grading model dropped; it is graded by the shared preset until "
            f"its next ingest self-calibrates it (EXECUTOR_SELF_CALIBRATE=false: it stays so)"
        )
    else:
        line = f"knowledge base {names[0]}: own grading model dropped; it is graded by similarity"
    console.print(line, highlight=False, markup=False)
