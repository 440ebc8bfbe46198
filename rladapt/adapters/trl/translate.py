"""RLJob -> TRL's native launch: ``<python> -m rladapt.adapters.trl.driver --config .rladapt/trl/<job>-<digest>.json``.

The config file holds the keyword arguments of that TRL version's ``GRPOConfig`` or ``RLOOConfig`` (each a
subclass of transformers' ``TrainingArguments``) and what the driver loads around them: the model, the data files,
the reward. Why a driver and not ``trl grpo --config x.yaml`` is in ``driver.py`` and DESIGN.md ("TRL runs through
a driver"). Every mapping below cites the file of the TRL wheel (or of transformers 4.57.6, which the matrix pins)
it relies on; the conformance suite instantiates each pinned version's real config class from the rendered keys.

One process trains and generates (``model.generate`` on the policy, the reference model beside it when the KL
coefficient is > 0): single node, one GPU or the CPU. What this cannot express raises ``UnsupportedError`` naming
the field and, where a pinned version can, the first one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from rladapt.adapters.common import WEIGHT_EXCLUDES, working_dir_runtime_env
from rladapt.metrics.names import kept_log_dir, log_dir_setting, with_tensorboard
from rladapt.plugins.native import NativeLaunch
from rladapt.plugins.translation import TranslationBuilder
from rladapt.primitives.errors import Problem, SpecError, UnsupportedError

from .versions import Keys, keys

if TYPE_CHECKING:
    from rladapt.plugins.adapter import FrameworkVersion
    from rladapt.primitives import RLJob

FRAMEWORK = "trl"
NATIVE_FIELD = f"spec.native.{FRAMEWORK}"
#: The driver module (``rladapt/adapters/trl/driver.py``); it runs in the job's interpreter, which has rladapt
#: already (every launcher starts a job through ``python -m rladapt.bootstrap``).
DRIVER = "rladapt.adapters.trl.driver"
#: Where the driver config is written, relative to the working directory.
CONFIG_DIR = ".rladapt/trl"
#: Format of the driver config (``driver.FORMAT``).
CONFIG_FORMAT = 1
#: What the driver's progress callback appends to, inside ``output_dir`` (one JSON line per logged step).
METRICS_FILE = "rladapt-metrics.jsonl"
#: TrainingArguments.save_steps is an int; "save only at the end" is a save interval no run reaches.
UNLIMITED = 2**31 - 1
#: The driver's resume argument (stable: ``rladapt resume`` passes it): a ``checkpoint-N`` directory.
RESUME_ARG = "--resume-from"

#: spec.model.dtype -> the mixed-precision flags of TrainingArguments (transformers 4.57.6 training_args.py
#: ``bf16``/``fp16``); the driver also loads the weights in that dtype. Set explicitly because GRPOConfig 0.23.1
#: turns ``bf16=None`` into ``not fp16`` (grpo_config.py ``__post_init__``), i.e. bf16 on by default.
PRECISION: dict[str, dict[str, bool]] = {
    "bfloat16": {"bf16": True, "fp16": False},
    "float16": {"bf16": False, "fp16": True},
    "float32": {"bf16": False, "fp16": False},
}
#: spec.logging.backends -> TrainingArguments.report_to integrations (transformers integrations/__init__.py).
REPORT_TO: dict[str, str] = {"wandb": "wandb", "tensorboard": "tensorboard", "mlflow": "mlflow"}

#: Files Ray must never upload with the working dir.
EXCLUDES: tuple[str, ...] = ("/.git/", "/.venv/", "/wandb/", "/runs/", *WEIGHT_EXCLUDES)


@dataclass(kw_only=True)
class _Builder(TranslationBuilder[Keys]):
    """TRL's settings are ``<trainer>Config`` fields (``values``) and the driver's data settings (``data``)."""

    trainer: str
    data: dict[str, Any] = field(default_factory=dict)


def config_path(job: RLJob, text: str) -> str:
    """``.rladapt/trl/<job>-<digest of text>.json``: two runs of one job from one working directory (another
    checkpoint dir, another version) each read their own file, since the job writes it when it starts and the
    driver reads it only after importing torch; same text, same name, so a render stays deterministic."""
    return f"{CONFIG_DIR}/{job.metadata.name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"


def translate(job: RLJob, fv: FrameworkVersion) -> NativeLaunch:
    b = _Builder(
        framework=FRAMEWORK, job=job, version=fv.parsed, k=keys(fv.version), trainer=job.spec.algorithm.name
    )
    _placement(b)
    _model(b)
    _algorithm(b)
    _batches(b)
    _rollout(b)
    data = _data(b)
    reward = _reward(b)
    _checkpoint(b)
    _eval(b)
    _logging(b)
    passthrough = _native(b)
    if b.problems:
        raise UnsupportedError(b.problems)

    ck = job.spec.checkpoint
    document = {
        "format": CONFIG_FORMAT,
        "trainer": b.trainer,
        "trl_version": fv.version,
        "job": job.metadata.name,
        "model": {
            "path": job.spec.model.path,
            "tokenizer": job.spec.model.tokenizer,
            "dtype": job.spec.model.dtype,
        },
        "data": data,
        # in the spec's units, for the driver's start line (the config counts completions)
        "batch": {
            "prompts_per_step": job.spec.training.global_batch,
            "completions_per_prompt": job.spec.algorithm.group_size,
        },
        "reward": reward,
        "resume": ck.resume,
        "metrics_file": METRICS_FILE,
        "config": dict(b.values),
    }
    text = json.dumps(document, indent=2) + "\n"
    path = config_path(job, text)
    argv = [job.spec.runtime.python, "-m", DRIVER, "--config", path]
    if ck.resume == "path" and ck.resume_path:
        argv += [RESUME_ARG, ck.resume_path]
    native = NativeLaunch.from_job(
        job,
        framework=FRAMEWORK,
        version=fv.version,
        argv=argv,
        files={path: text},
        passthrough=passthrough,
        runtime_env=runtime_env(job),
        notes=b.notes,
        origins=b.origins,
        metrics_dir=own_logging_dir(job),
    )
    if "wandb" in job.spec.logging.backends and "WANDB_PROJECT" not in native.env:
        # transformers' WandbCallback reads the project from the environment (integrations/integration_utils.py)
        native = native.with_env({"WANDB_PROJECT": job.spec.logging.project})
    return native


# --- sections ------------------------------------------------------------------------------------------------


def _placement(b: _Builder) -> None:
    job = b.job
    pools = job.placement.pools
    if len(pools) != 1:
        b.unsupported(
            "spec.placement.pools",
            "more than one pool (one process trains, generates and holds the reference model)",
            found=f"{len(pools)} pools",
        )
        return
    pool = pools[0]
    if pool.nodes != 1:
        b.unsupported(
            "spec.placement.pools[0].nodes",
            "a job on several nodes (rladapt starts TRL as one process; accelerate multi-node is not mapped)",
            found=pool.nodes,
            expected="1",
        )
    if pool.gpus_per_node != 1:
        b.unsupported(
            "spec.placement.pools[0].gpus_per_node",
            "more than one GPU (rladapt starts TRL as one process, which uses one GPU, or the CPU when none is "
            "visible; accelerate/torchrun data parallelism is not mapped)",
            found=pool.gpus_per_node,
            expected="1",
        )
    for name, res in job.spec.roles.items():
        if res.gpus is not None:
            b.unsupported(
                f"spec.roles.{name}.gpus",
                "GPUs per role (every role shares the one process)",
                found=res.gpus,
            )
    ws = job.spec.weight_sync
    if ws.method not in ("auto",):
        b.unsupported(
            "spec.weight_sync.method",
            f"weight sync {ws.method!r} (the trainer generates with the weights it trains; nothing is synced)",
            found=ws.method,
            expected="auto",
        )
    if ws.every_steps != 1:
        b.unsupported(
            "spec.weight_sync.every_steps",
            "generating with weights older than the current step (the trainer generates with the live policy)",
            found=ws.every_steps,
            expected="1",
        )
    b.notes.append(
        "trl runs as one process: on the GPU transformers picks when one is visible, else on the CPU "
        "(TrainingArguments device selection)"
    )


def _model(b: _Builder) -> None:
    m = b.job.spec.model
    for key, value in PRECISION[m.dtype].items():
        b.set(key, value, "spec.model.dtype")
    if m.gradient_checkpointing is not None:
        b.set("gradient_checkpointing", m.gradient_checkpointing, "spec.model.gradient_checkpointing")
    if m.critic_path is not None:
        b.unsupported(
            "spec.model.critic_path", f"a critic ({b.trainer} trains no value model)", found=m.critic_path
        )


def _advantage(b: _Builder) -> None:
    """GRPOTrainer's baseline is the group mean (grpo_trainer.py _generate_and_score_completions: rewards minus
    mean_grouped_rewards); ``scale_rewards`` "group" divides by the group's std, "none" does not (grpo_config.py
    0.23.1 to 1.16.0, default "group")."""
    alg = b.job.spec.algorithm
    if alg.baseline == "leave_one_out":
        b.unsupported(
            "spec.algorithm.baseline",
            "a leave-one-out baseline with GRPOTrainer (its baseline is the group mean; algorithm: rloo is "
            "TRL's RLOOTrainer)",
            found=alg.baseline,
            expected="group_mean",
        )
    elif alg.normalize_by_group_std is not None:
        scale = "group" if alg.normalize_by_group_std else "none"
        b.set("scale_rewards", scale, "spec.algorithm.normalize_by_group_std")
    elif alg.baseline is not None:
        # the group mean is GRPOTrainer's own: written out, with TRL's own std scaling, so the launch says so
        b.set("scale_rewards", "group", "spec.algorithm.baseline")


def _algorithm(b: _Builder) -> None:
    alg = b.job.spec.algorithm
    if alg.group_size < 2:
        b.unsupported(
            "spec.algorithm.group_size",
            f"{b.trainer} with one completion per prompt (the advantage compares completions of a prompt; "
            "GRPOConfig/RLOOConfig.num_generations >= 2)",
            found=alg.group_size,
            expected="2 or more",
        )
    # GRPOConfig.num_generations / RLOOConfig.num_generations (grpo_config.py, rloo_config.py: 0.23.1 to 1.16.0)
    b.set("num_generations", alg.group_size, "spec.algorithm.group_size")
    kl = alg.kl
    # beta: the KL coefficient; 0.0 loads no reference model (grpo_config.py / rloo_config.py, every version)
    b.set("beta", kl.coef, "spec.algorithm.kl.coef")
    if kl.coef > 0:
        wanted = "loss" if b.trainer == "grpo" else "reward"
        if kl.in_ != wanted:
            b.unsupported(
                "spec.algorithm.kl.in",
                f"KL in the {kl.in_} with {b.trainer} ({b.trainer} puts it in the {wanted}: grpo_trainer.py "
                "_compute_loss adds beta * KL to the loss, rloo_trainer.py subtracts it from the reward)",
                found=kl.in_,
                expected=wanted,
            )
    # GRPO's per_token_kl is exp(ref - logp) - (ref - logp) - 1, k3 (grpo_trainer.py _compute_loss); RLOO's is
    # logp_old - ref summed over the completion, k1 (rloo_trainer.py, 0.23.1 to 1.16.0). Checked with a zero
    # coefficient too: an estimator nothing computes would otherwise reach nothing.
    estimator = "k3" if b.trainer == "grpo" else "k1"
    if kl.estimator not in (None, estimator):
        b.unsupported(
            "spec.algorithm.kl.estimator",
            f"the {kl.estimator} KL estimator with {b.trainer} (it computes {estimator})",
            found=kl.estimator,
            expected=estimator,
        )
    # epsilon / epsilon_high: the clip range (grpo_config.py and rloo_config.py, 0.23.1 to 1.16.0)
    b.set("epsilon", alg.clip.low, "spec.algorithm.clip.low")
    b.set("epsilon_high", alg.clip.high, "spec.algorithm.clip.high")
    # num_iterations: updates per generation batch, PPO's epochs (GRPO's mu)
    b.set("num_iterations", alg.ppo_epochs, "spec.algorithm.ppo_epochs")
    if b.trainer == "grpo":
        _advantage(b)
    if alg.entropy_coef is not None:
        if b.trainer == "grpo" and b.k.entropy_coef:
            b.set("entropy_coef", alg.entropy_coef, "spec.algorithm.entropy_coef")
        else:
            b.unsupported(
                "spec.algorithm.entropy_coef",
                f"an entropy bonus with {b.trainer} (GRPOConfig.entropy_coef)",
                first="1.16.0" if b.trainer == "grpo" else None,
                found=alg.entropy_coef,
            )
    for name in ("gamma", "lam"):
        value = getattr(alg, name)
        if value != 1.0:
            label = "lambda" if name == "lam" else name
            b.unsupported(
                f"spec.algorithm.{label}",
                f"a discount or GAE {label} ({b.trainer} scores whole completions, there is no value model)",
                found=value,
                expected="1.0",
            )


def _batches(b: _Builder) -> None:
    tr = b.job.spec.training
    group = b.job.spec.algorithm.group_size
    # per_device_train_batch_size counts completions (sequences) per forward pass (grpo_config.py docstring)
    b.set("per_device_train_batch_size", tr.micro_batch_per_gpu, "spec.training.micro_batch_per_gpu")
    per_update = tr.mini_batch * group
    per_round = tr.global_batch * group
    if per_update % tr.micro_batch_per_gpu:
        b.unsupported(
            "spec.training.micro_batch_per_gpu",
            "a micro batch that does not divide the completions of one update (mini_batch x group_size = "
            f"{per_update}; gradient_accumulation_steps must be a whole number)",
            found=tr.micro_batch_per_gpu,
            expected=f"a divisor of {per_update}",
        )
    else:
        # one optimizer step = per_device_train_batch_size x gradient_accumulation_steps completions (one process)
        b.set("gradient_accumulation_steps", per_update // tr.micro_batch_per_gpu, "spec.training.mini_batch")
    # generation_batch_size: completions generated per round, split into the updates of that round; it must be a
    # multiple of num_generations and of per_device_train_batch_size (grpo_config.py __post_init__)
    b.set("generation_batch_size", per_round, "spec.training.global_batch")
    if tr.steps is not None and tr.epochs is not None:
        # a positive max_steps overrides num_train_epochs: the Trainer derives its epochs from max_steps and loops
        # over the data as often as that takes (transformers 4.57.6 trainer.py _inner_training_loop; the
        # TrainingArguments.max_steps doc), so no setting stops at whichever limit comes first
        b.unsupported(
            "spec.training.epochs",
            "spec.training.steps and spec.training.epochs together (transformers' max_steps overrides "
            "num_train_epochs; set one of the two)",
            found=tr.epochs,
        )
    elif tr.steps is not None:
        # max_steps counts optimizer steps (transformers Trainer), as spec.training.steps does
        b.set("max_steps", tr.steps, "spec.training.steps")
    else:
        # TrainingArguments.num_train_epochs defaults to 3.0; the spec's default is one pass
        b.set("num_train_epochs", tr.epochs or 1, "spec.training.epochs")
    opt = tr.optimizer
    b.set("learning_rate", opt.lr, "spec.training.optimizer.lr")
    if opt.warmup_steps is not None:
        b.set("warmup_steps", opt.warmup_steps, "spec.training.optimizer.warmup_steps")
    if opt.warmup_ratio is not None:
        b.set("warmup_ratio", opt.warmup_ratio, "spec.training.optimizer.warmup_ratio")
    if opt.weight_decay is not None:
        b.set("weight_decay", opt.weight_decay, "spec.training.optimizer.weight_decay")
    if opt.max_grad_norm is not None:
        # TrainingArguments.max_grad_norm: the Trainer clips the global norm before each optimizer step
        # (transformers 4.57.6 trainer.py _inner_training_loop, clip_grad_norm_)
        b.set("max_grad_norm", opt.max_grad_norm, "spec.training.optimizer.max_grad_norm")
    if tr.critic_optimizer is not None:
        b.unsupported("spec.training.critic_optimizer", f"a critic optimizer ({b.trainer} has no critic)")
    if tr.critic_warmup_steps:
        b.unsupported("spec.training.critic_warmup_steps", f"a critic warm-up ({b.trainer} has no critic)")
    # the old and reference log-probs run in chunks of per_device_train_batch_size, the update's own micro batch
    # (grpo_trainer.py _generate_and_score_completions: batch_size = args.per_device_train_batch_size, 1.16.0)
    for name, budget in tr.budgets:
        for field_name, value in budget:
            if value is not None:
                b.unsupported(
                    f"spec.training.budgets.{name}.{field_name}",
                    "a batch of its own for this pass (TRL computes every log-prob pass in the update's "
                    "per_device_train_batch_size chunks, and trains no critic)",
                    found=value,
                )
    par = tr.parallel
    for name in ("tp", "pp", "cp", "sp"):
        if getattr(par, name) != 1:
            b.unsupported(
                f"spec.training.parallel.{name}",
                "model parallelism (one process holds the whole model)",
                found=getattr(par, name),
                expected="1",
            )
    if par.zero_stage is not None:
        b.unsupported(
            "spec.training.parallel.zero_stage", "DeepSpeed ZeRO (not mapped)", found=par.zero_stage
        )


def _rollout(b: _Builder) -> None:
    ro = b.job.spec.rollout
    d = b.job.spec.data
    if ro.mode == "sync":
        # the capability check refuses async; sync is what the trainer always does, so it sets nothing
        b.notes.append("spec.rollout.mode sync: the trainer always generates, then trains, in one process")
    # temperature / top_p / top_k: the sampling of model.generate (grpo_config.py, rloo_config.py)
    b.set("temperature", ro.temperature, "spec.rollout.temperature")
    b.set("top_p", ro.top_p, "spec.rollout.top_p")
    b.set("top_k", b.k.top_k_off if ro.top_k == -1 else ro.top_k, "spec.rollout.top_k")
    if ro.max_tokens is not None and ro.max_tokens != d.max_response_length:
        b.unsupported(
            "spec.rollout.max_tokens",
            "a generation limit other than data.max_response_length (both are max_completion_length)",
            found=ro.max_tokens,
            expected=str(d.max_response_length),
        )
    b.set("max_completion_length", d.max_response_length, "spec.data.max_response_length")
    if ro.tensor_parallel != 1:
        b.unsupported(
            "spec.rollout.tensor_parallel",
            "tensor-parallel generation (model.generate on one device)",
            found=ro.tensor_parallel,
            expected="1",
        )
    if "gpu_memory_utilization" in ro.model_fields_set:
        b.unsupported(
            "spec.rollout.gpu_memory_utilization",
            "a rollout memory share (it applies to a vLLM or SGLang engine; TRL generates with the policy)",
            found=ro.gpu_memory_utilization,
        )
    if ro.val.model_fields_set:
        b.unsupported(
            "spec.rollout.val",
            "validation sampling of its own (the trainer evaluates with the training sampling)",
            found=", ".join(sorted(ro.val.model_fields_set)),
        )


def _data(b: _Builder) -> dict[str, Any]:
    d = b.job.spec.data
    # shuffle_dataset (grpo_config.py, rloo_config.py: 0.23.1 to 1.16.0)
    b.set("shuffle_dataset", d.shuffle, "spec.data.shuffle")
    if d.seed is not None:
        # TrainingArguments.seed seeds the sampler, the model init and generation (transformers set_seed)
        b.set("seed", d.seed, "spec.data.seed")
    drop: int | None = None
    if b.k.max_prompt_length:
        # max_prompt_length truncates a longer prompt on the left (grpo_config.py 0.23.1)
        b.set("max_prompt_length", d.max_prompt_length, "spec.data.max_prompt_length")
    else:
        drop = d.max_prompt_length
        if d.overlong_prompts is None:
            # the one thing this version can do with spec.data.max_prompt_length: said, since the user did not
            b.notes.append(
                f"trl {b.version} has no max_prompt_length (removed after its 0.26.0 deprecation, grpo_config.py): "
                f"the driver drops prompts longer than spec.data.max_prompt_length={d.max_prompt_length} tokens "
                "instead of truncating them, as TRL's deprecation note asks (spec.data.overlong_prompts: drop "
                "says so)"
            )
    for i, path in enumerate([*d.train, *d.val]):
        if not path.endswith((".parquet", ".jsonl", ".json")):
            where = f"spec.data.train[{i}]" if i < len(d.train) else f"spec.data.val[{i - len(d.train)}]"
            b.problems.append(
                Problem(where, "the driver reads local data files", "a .parquet, .jsonl or .json file", path)
            )
    return {
        "train": list(d.train),
        "val": list(d.val) + list(b.job.spec.eval.datasets),
        "prompt_key": d.prompt_key,
        "drop_prompts_longer_than": drop,
    }


def _reward(b: _Builder) -> dict[str, Any]:
    rw = b.job.spec.reward
    if rw.builtin is not None:
        # the capability check lets only math through, and only where trl.rewards.accuracy_reward exists
        b.notes.append(
            "spec.reward.builtin math is trl.rewards.accuracy_reward (math-verify): the data needs a `solution` "
            "column with the ground truth and conversational prompts (it reads completion[0]['content']); "
            "install math-verify where the job runs"
        )
        return {"builtin": rw.builtin.name}
    if rw.function is not None:
        return {"function": {"path": rw.function.path, "name": rw.function.name}}
    return {}


def _checkpoint(b: _Builder) -> None:
    ck = b.job.spec.checkpoint
    tr = b.job.spec.training
    # output_dir: the Trainer writes <output_dir>/checkpoint-<global step>/ (transformers trainer.py
    # _save_checkpoint, PREFIX_CHECKPOINT_DIR in trainer_utils.py)
    b.set("output_dir", b.job.checkpoint_dir, "spec.checkpoint.dir")
    # save_strategy "steps" saves every save_steps and at the end of training (trainer_callback.py
    # DefaultFlowCallback.on_step_end, transformers 4.57.6)
    b.set("save_strategy", "steps", "spec.checkpoint.every_steps")
    b.set("save_steps", ck.every_steps or tr.steps or UNLIMITED, "spec.checkpoint.every_steps")
    if ck.keep_last is not None:
        b.set("save_total_limit", ck.keep_last, "spec.checkpoint.keep_last")
    if ck.save_hf:
        b.notes.append(
            "spec.checkpoint.save_hf: every checkpoint-N/ already holds the model in Hugging Face format"
        )


def _eval(b: _Builder) -> None:
    ev = b.job.spec.eval
    has_val = bool(b.job.spec.data.val or ev.datasets)
    if ev.every_steps:
        if not has_val:
            b.problems.append(
                Problem(
                    "spec.eval.every_steps",
                    "evaluation needs data to evaluate on",
                    "spec.data.val or spec.eval.datasets",
                    str(ev.every_steps),
                )
            )
        # eval_strategy / eval_steps (TrainingArguments, transformers 4.57.6)
        b.set("eval_strategy", "steps", "spec.eval.every_steps")
        b.set("eval_steps", ev.every_steps, "spec.eval.every_steps")
    elif has_val:
        b.notes.append("spec.data.val is loaded but never evaluated: spec.eval.every_steps is 0")


def _logging(b: _Builder) -> None:
    lg = b.job.spec.logging
    if lg.val_generations:
        # log_completions logs the buffer of the latest completions at every log call, training ones included
        # (grpo_trainer.py log, 0.23.1 to 1.16.0): no count of an evaluation's own generations
        b.unsupported(
            "spec.logging.val_generations",
            f"a count of evaluation generations logged ({b.trainer}'s log_completions logs its latest completions, "
            "training ones included)",
        )
    # report_to: transformers 4.57.6 defaults to "all" installed integrations; the spec lists them, and rladapt
    # adds TensorBoard, whose events `rladapt metrics` reads back (TensorBoardCallback, integration_utils.py)
    report = [REPORT_TO[x] for x in lg.backends if x in REPORT_TO]
    b.set("report_to", *with_tensorboard(report, kept=own_logging_dir(b.job)))
    # logging_dir: where TensorBoardCallback writes (SummaryWriter(log_dir=args.logging_dir), transformers
    # 4.57.6 integration_utils.py); a user's tensorboard backend writes there too (TrainingArguments has one).
    # spec.logging.dir is that logging_dir, read back from there (translate records it); a logging_dir the spec's
    # native items name likewise, and the render then leaves the key to it; else rladapt's own.
    logging_dir = log_dir_setting(b.job, _native_logging_dir(b.job))
    if logging_dir is not None:
        b.set("logging_dir", *logging_dir)
    b.set("run_name", b.job.experiment, "spec.logging.experiment")
    # Picked by rladapt for the progress display (driver.progress_callback prints and records every logged step)
    b.set("logging_steps", 1, "rladapt: the progress display logs every step")
    b.set("disable_tqdm", True, "rladapt: the progress display replaces tqdm's bar")


def own_logging_dir(job: RLJob) -> str | None:
    """The ``logging_dir`` the launch names: a native item's (it replaces the generated key), else
    ``spec.logging.dir``; None: rladapt's own."""
    return kept_log_dir(job, _native_logging_dir(job))


def _native_logging_dir(job: RLJob) -> str | None:
    """The ``logging_dir`` the spec's native items name (the last one), else None."""
    found = None
    for item in job.spec.native.get(FRAMEWORK, []):
        key, sep, raw = item.partition("=")
        if key == "logging_dir" and sep:
            try:
                value = yaml.safe_load(raw) if raw else None
            except yaml.YAMLError:
                continue  # _native refuses the item by name
            found = None if value is None else str(value)
    return found or None


def _native(b: _Builder) -> list[str]:
    """``spec.native.trl``: ``KEY=VALUE`` items, each a trainer config key with a YAML value."""
    items = list(b.job.spec.native.get(FRAMEWORK, []))
    bad: list[Problem] = []
    for i, item in enumerate(items):
        key, sep, raw = item.partition("=")
        if not sep or not key.isidentifier():
            bad.append(Problem(f"{NATIVE_FIELD}[{i}]", "not a config key setting", "KEY=VALUE", item))
            continue
        try:
            value = yaml.safe_load(raw) if raw else None
        except yaml.YAMLError as exc:
            bad.append(Problem(f"{NATIVE_FIELD}[{i}]", f"the value is not YAML ({exc})", "KEY=VALUE", item))
            continue
        if key in b.values:
            b.notes.append(
                f"{NATIVE_FIELD}[{i}] overrides {key}={b.values[key]!r}, which rladapt derived from the spec"
            )
        b.set(key, value, f"{NATIVE_FIELD}[{i}]")
    if bad:
        raise SpecError(bad)
    return items


def runtime_env(job: RLJob) -> dict[str, Any]:
    """Ray runtime_env for submitting the driver: the working dir without weights or checkpoints."""
    return working_dir_runtime_env(job, EXCLUDES, [own_logging_dir(job)])
