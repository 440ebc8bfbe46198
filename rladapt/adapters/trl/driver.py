"""The TRL driver: ``python -m rladapt.adapters.trl.driver --config FILE [--resume-from PATH]``.

It runs where the job runs, in the framework's environment (torch, transformers, datasets, trl), and does what
TRL's own ``trl grpo`` script does with a config that rladapt rendered: load the model and tokenizer, the data
files with ``datasets``, the reward, build the trainer config from ``FILE``'s ``config`` keys (each one a field of
that TRL version's ``GRPOConfig`` / ``RLOOConfig``, checked offline against the version's snapshot before the
launch), then ``trainer.train(resume_from_checkpoint=...)``. Why a driver and not ``trl grpo --config``: that
script parses with ``fail_with_unknown_args=False`` (trl/scripts/grpo.py, 0.23.1 to 1.16.0), so a key it does not
know is silently dropped; it takes a reward only as an importable dotted name, not a file and a function name; and
it has no place for the progress callback.

The file is JSON (``rladapt/adapters/trl/translate.py`` writes it)::

    {"format": 1, "trainer": "grpo" | "rloo", "trl_version": "1.16.0",
     "model": {"path": ..., "tokenizer": ..., "dtype": "float32"},
     "data": {"train": [...], "val": [...], "prompt_key": "prompt", "drop_prompts_longer_than": 1024 | null},
     "batch": {"prompts_per_step": 2, "completions_per_prompt": 8},
     "reward": {"function": {"path": ..., "name": ...}} | {"builtin": "math"},
     "resume": "auto" | "never" | "path", "metrics_file": "rladapt-metrics.jsonl",
     "config": {<GRPOConfig / RLOOConfig keyword arguments>}}

Checkpoints: TRL's ``Trainer`` writes ``<config.output_dir>/checkpoint-<global step>/`` every ``save_steps``
(transformers trainer.py ``_save_checkpoint``). ``--resume-from PATH`` resumes from that checkpoint directory;
without it, ``resume: auto`` resumes from the highest ``checkpoint-N`` in ``output_dir`` when there is one
(``transformers.trainer_utils.get_last_checkpoint``) and starts fresh otherwise.

Samples: the prompts each step consumed, hashed, one JSON line per reward call in
``<output_dir>/rladapt-samples.jsonl`` (``traced_reward``), which ``rladapt certify`` compares across a resume.

Progress: one JSON line per logged step is appended to ``<output_dir>/<metrics_file>`` and a line
``step N/M  reward R  loss L`` is printed, which ``rladapt launch --follow`` shows as the job's output. It is the
progress record only: ``rladapt metrics`` reads the TensorBoard events the Trainer writes into ``logging_dir``
(``<output_dir>/rladapt-metrics``, set by the render), as for every framework.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

FORMAT = 1
#: The file (inside ``output_dir``) the progress callback appends to, unless the config names another.
METRICS_FILE = "rladapt-metrics.jsonl"
#: The file (inside ``output_dir``) that says which prompts each step consumed (``traced_reward``).
SAMPLES_FILE = "rladapt-samples.jsonl"
EXIT_USAGE = 2


class DriverError(Exception):
    """A problem with the job's inputs, found before training starts: printed on one line, exit code 2."""


def _read_config(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DriverError(f"--config {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise DriverError(f"--config {path}: cannot read it as JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DriverError(f"--config {path}: not an rladapt TRL driver config of format {FORMAT}")
    for key in ("trainer", "model", "data", "reward", "config"):
        if key not in data:
            raise DriverError(f"--config {path}: missing {key!r}")
    if data["trainer"] not in ("grpo", "rloo"):
        raise DriverError(f"--config {path}: trainer {data['trainer']!r} is not grpo or rloo")
    return data


def _data_format(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".jsonl", ".json"):
        return "json"
    raise DriverError(f"data file {path!r}: expected a .parquet, .jsonl or .json file")


def load_split(files: Sequence[str], prompt_key: str, what: str) -> Any:
    """The rows of ``files`` (one format) as a ``datasets.Dataset`` whose prompt column is ``prompt``."""
    import datasets

    formats = {_data_format(f) for f in files}
    if len(formats) != 1:
        raise DriverError(f"{what}: every file must have the same format, found {sorted(formats)}")
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise DriverError(f"{what}: no such file: {', '.join(missing)}")
    dataset = datasets.load_dataset(formats.pop(), data_files=list(files), split="train")
    if prompt_key not in dataset.column_names:
        raise DriverError(
            f"{what}: no column {prompt_key!r} (spec.data.prompt_key); found {', '.join(dataset.column_names)}"
        )
    if prompt_key != "prompt":
        if "prompt" in dataset.column_names:
            dataset = dataset.remove_columns("prompt")
        dataset = dataset.rename_column(prompt_key, "prompt")
    return dataset


def _prompt_tokens(tokenizer: Any, prompt: Any) -> int:
    if isinstance(prompt, str):
        return len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    # a conversation: what the trainer feeds the model is the chat template applied to it
    return len(tokenizer.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True))


def drop_long_prompts(dataset: Any, tokenizer: Any, limit: int) -> Any:
    """The rows whose prompt has at most ``limit`` tokens, as TRL 0.26+ asks instead of ``max_prompt_length``."""
    kept = dataset.filter(lambda row: _prompt_tokens(tokenizer, row["prompt"]) <= limit)
    dropped = len(dataset) - len(kept)
    if dropped:
        print(f"[rladapt] dropped {dropped} of {len(dataset)} prompts longer than {limit} tokens", flush=True)
    if len(kept) == 0:
        raise DriverError(f"every prompt is longer than spec.data.max_prompt_length={limit} tokens")
    return kept


def load_reward(reward: dict[str, Any]) -> Callable[..., Any]:
    """The reward function TRL calls as ``f(prompts=, completions=, completion_ids=, **columns) -> list[float]``."""
    if "builtin" in reward:
        name = reward["builtin"]
        if name != "math":
            raise DriverError(f"reward.builtin {name!r} has no TRL scorer")
        # trl/rewards/accuracy_rewards.py (0.29.1, 1.16.0): math-verify on the `solution` column
        from trl.rewards import accuracy_reward

        return accuracy_reward
    fn = reward.get("function")
    if not isinstance(fn, dict):
        raise DriverError("reward: expected a function or a builtin")
    # the same loader as the evaluator's scorers: standard library only, imported here, in the job
    from rladapt.primitives.functions import NotLoadable, load_function

    path = Path(str(fn["path"]))
    try:
        return load_function(
            path, str(fn["name"]), f"rladapt_reward_{path.stem}", whence=f" (from {os.getcwd()!r})"
        )
    except NotLoadable as exc:
        raise DriverError(f"spec.reward.function.{exc.part}: {exc.message}") from None


#: What transformers' TensorBoardCallback needs (transformers 4.57.6 integration_utils.py is_tensorboard_available:
#: tensorboard or tensorboardX); it raises a RuntimeError in the Trainer's constructor otherwise.
TENSORBOARD_MODULES = ("tensorboard", "tensorboardX")


def require_tensorboard(report_to: Any, modules: Sequence[str] = TENSORBOARD_MODULES) -> None:
    """A DriverError, before the model is loaded, when the config logs to TensorBoard (rladapt sets it: its events
    are what ``rladapt metrics`` reads) and this interpreter cannot."""
    wanted = [report_to] if isinstance(report_to, str) else list(report_to or [])
    if "tensorboard" not in wanted or any(importlib.util.find_spec(m) is not None for m in modules):
        return
    raise DriverError(
        f"report_to has tensorboard (the metrics rladapt reads back) but {sys.executable} has none of "
        f"{', '.join(modules)}: pip install tensorboard (the rladapt[trl] extra installs it)"
    )


def _dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def progress_callback(metrics_path: Path) -> Any:
    """A ``TrainerCallback`` that appends each log of a training step to ``metrics_path`` and prints a line."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        started = time.monotonic()

        def on_log(
            self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any
        ) -> None:
            if not state.is_world_process_zero or not logs or "train_runtime" in logs:
                return
            row = {
                "step": state.global_step,
                "max_steps": state.max_steps,
                "reward": _number(logs.get("reward")),
                "loss": _number(logs.get("loss")),
                "elapsed_seconds": round(time.monotonic() - self.started, 2),
                "logs": {k: v for k, v in logs.items() if _number(v) is not None},
            }
            with metrics_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row, sort_keys=True) + "\n")
            reward = "-" if row["reward"] is None else f"{row['reward']:.3f}"
            loss = "-" if row["loss"] is None else f"{row['loss']:.4f}"
            # an evaluation's log holds only eval_* keys (transformers' Trainer.evaluate prefixes them)
            val = _number(logs.get("eval_reward"))
            what = (
                f"validation reward {val:.3f}"
                if val is not None and row["reward"] is None
                else f"reward {reward}  loss {loss}"
            )
            print(
                f"[rladapt] step {state.global_step}/{state.max_steps}  {what}  ({row['elapsed_seconds']:.0f} s)",
                flush=True,
            )

    return Progress()


def prompt_hash(prompt: Any) -> str:
    """A short, stable hash of one prompt (a string or a conversation), the same in every process and run."""
    import hashlib

    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def traced_reward(
    func: Callable[..., Any], samples_path: Path, step: Callable[[], int], group: int, rank: int
) -> Callable[..., Any]:
    """``func``, also appending to ``samples_path`` the hashes of the prompts each call scores, with the step
    they train (``step()``: the trainer's global step, so the step being computed is one more).

    The reward sees every prompt of a generation (TRL passes ``prompts=``, one per completion, each repeated
    ``group`` times in a row: grpo_trainer.py ``_calculate_rewards``, 0.23.1 to 1.16.0), so this is where the
    data order a resume must keep is observable without touching TRL. Each driver start has its own id: a step
    redone after a resume is read back as redone (``rladapt.adapters.trl.resumes``). A coroutine function is
    returned as it is (TRL awaits those itself).
    """
    import functools
    import inspect

    if inspect.iscoroutinefunction(func):
        return func
    start = f"{os.getpid()}-{time.time_ns()}"

    @functools.wraps(func)
    def reward(*args: Any, **kwargs: Any) -> Any:
        prompts = list(kwargs.get("prompts") or [])
        firsts = prompts[::group] if group > 1 and len(prompts) % group == 0 else prompts
        row = {"start": start, "rank": rank, "step": step() + 1, "prompts": [prompt_hash(p) for p in firsts]}
        with samples_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, sort_keys=True) + "\n")
        return func(*args, **kwargs)

    return reward


def resume_point(mode: str, output_dir: str, explicit: str | None) -> str | None:
    """What ``trainer.train(resume_from_checkpoint=...)`` gets: ``--resume-from``, else the newest for auto."""
    if explicit is not None:
        if not Path(explicit).is_dir():
            raise DriverError(f"--resume-from {explicit}: no such checkpoint directory")
        return explicit
    if mode != "auto" or not Path(output_dir).is_dir():
        return None
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(output_dir)


def trained_to(checkpoint: str | None) -> int | None:
    """The global step ``checkpoint``'s ``trainer_state.json`` records (None: no checkpoint, or none recorded)."""
    if checkpoint is None:
        return None
    try:
        state = json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # the Trainer's own load says what is wrong with it
    step = state.get("global_step") if isinstance(state, dict) else None
    return step if isinstance(step, int) else None


def _quiet() -> None:
    """Keep the job's output to the progress lines: no per-call progress bars or CPU-only warnings."""
    import warnings

    import datasets
    import transformers

    transformers.logging.set_verbosity_warning()
    datasets.disable_progress_bars()
    for message in ("'pin_memory' argument is set as true", "mtime may not be reliable"):
        warnings.filterwarnings("ignore", message=f".*{message}")


def run(config: dict[str, Any], resume_from: str | None) -> int:
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet()
    if config["trainer"] == "grpo":
        from trl import GRPOConfig as TrainerConfig
        from trl import GRPOTrainer as Trainer
    else:
        from trl import RLOOConfig as TrainerConfig
        from trl import RLOOTrainer as Trainer

    model_cfg, data_cfg = config["model"], config["data"]
    # the user's files first: a wrong reward path fails before the model is loaded
    reward = load_reward(config["reward"])
    require_tensorboard(config["config"].get("report_to"))
    args = TrainerConfig(**config["config"])
    transformers.set_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(model_cfg.get("tokenizer") or model_cfg["path"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # `dtype` (transformers 4.56+, which every pinned TRL requires; `torch_dtype` is deprecated there)
    model = AutoModelForCausalLM.from_pretrained(model_cfg["path"], dtype=_dtype(model_cfg["dtype"]))
    train = load_split(data_cfg["train"], data_cfg["prompt_key"], "spec.data.train")
    val = load_split(data_cfg["val"], data_cfg["prompt_key"], "spec.data.val") if data_cfg["val"] else None
    limit = data_cfg.get("drop_prompts_longer_than")
    if limit is not None:
        train = drop_long_prompts(train, tokenizer, int(limit))
        if val is not None:
            val = drop_long_prompts(val, tokenizer, int(limit))
    output_dir = str(args.output_dir)
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    metrics = Path(output_dir) / str(config.get("metrics_file") or METRICS_FILE)
    checkpoint = resume_point(str(config.get("resume", "auto")), output_dir, resume_from)
    done = trained_to(checkpoint)
    if done is not None and 0 < args.max_steps <= done:
        # transformers' Trainer resumed at max_steps still trains one more step (its loop checks the end only
        # after a step: trainer.py _inner_training_loop, 4.57.6), logs it and saves checkpoint-<max_steps + 1>; a
        # run killed after its last checkpoint has nothing left to train
        print(
            f"[rladapt] {checkpoint} holds step {done} of {args.max_steps}: nothing left to train", flush=True
        )
        return 0
    holder: list[Any] = []
    reward = traced_reward(
        reward,
        Path(output_dir) / SAMPLES_FILE,
        lambda: int(holder[0].state.global_step) if holder else 0,
        int(getattr(args, "num_generations", 1) or 1),
        int(os.environ.get("RANK", "0")),
    )
    trainer = Trainer(
        model=model,
        reward_funcs=reward,
        args=args,
        train_dataset=train,
        eval_dataset=val,
        processing_class=tokenizer,
        callbacks=[progress_callback(metrics)],
    )
    holder.append(trainer)
    # With disable_tqdm the Trainer prints every log as a dict (PrinterCallback); the progress line replaces it.
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    batch = config.get("batch") or {}
    per_step = (
        f", {batch['prompts_per_step']} prompts x {batch['completions_per_prompt']} completions per generation"
        if {"prompts_per_step", "completions_per_prompt"} <= set(batch)
        else ""
    )
    print(
        f"[rladapt] TRL {config.get('trl_version', '')} {config['trainer'].upper()}: "
        f"{len(train)} prompts{per_step}, {args.max_steps if args.max_steps > 0 else 'all'} steps"
        + (f", resuming from {checkpoint}" if checkpoint else ""),
        flush=True,
    )
    trainer.train(resume_from_checkpoint=checkpoint)
    steps = sorted(p.name for p in Path(output_dir).glob("checkpoint-*") if p.is_dir())
    print(f"[rladapt] done: checkpoints in {os.path.abspath(output_dir)} ({', '.join(steps) or 'none'})")
    print(f"[rladapt] metrics (one JSON line per logged step): {os.path.abspath(metrics)}", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rladapt.adapters.trl.driver", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--config", required=True, help="the driver config rladapt rendered (JSON)")
    parser.add_argument(
        "--resume-from", default=None, metavar="PATH", help="a checkpoint-N directory to resume from"
    )
    ns = parser.parse_args(argv)
    try:
        return run(_read_config(ns.config), ns.resume_from)
    except DriverError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
