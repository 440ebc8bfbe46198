"""The built-in OpenRLHF adapter: a pluggy plugin registering framework ``openrlhf`` and its patches.

A job becomes ``python3 -m openrlhf.cli.train_ppo_ray <flags>`` in the flag names of the chosen release, submitted
with ``ray job submit --runtime-env-json ... -- <argv>`` (``NativeLaunch.runtime_env`` is that JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from rladapt.compat import bundled
from rladapt.plugins import CheckpointLayout, FrameworkAdapter, FrameworkVersion, Patch, hookimpl

from . import translate as _translate
from . import versions
from .checks import FlagView, check
from .parser import ParserUnavailable, build_parser_cached, find_source, parse, problems
from .patches import PATCHES

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch
    from rladapt.primitives import Problem, RLJob

NATIVE_FIELD = "spec.native.openrlhf"


class OpenRLHFAdapter(FrameworkAdapter):
    PLUGIN_NAME = "openrlhf"
    DISTRIBUTION = "openrlhf"
    DESCRIPTION = "OpenRLHF: python3 -m openrlhf.cli.train_ppo_ray <flags>, submitted as a Ray job"

    MATRIX = bundled("openrlhf")

    def capabilities(self, version: str) -> frozenset[str]:
        return versions.capabilities(version)

    def translate(self, job: RLJob, version: FrameworkVersion) -> NativeLaunch:
        return _translate.translate(job, version)

    def validate_native(self, native: NativeLaunch) -> list[Problem] | None:
        """The real parser of ``native.version`` judges the whole argv, native flags included (when available)."""
        from rladapt.primitives.errors import Problem

        source = find_source(native.version)
        if source is None:
            return None
        try:
            parser = build_parser_cached(source, f"openrlhf-{native.version}")
        except ParserUnavailable:
            return None
        if tuple(native.argv[1:3]) != ("-m", _translate.ENTRY_MODULE):
            return [
                Problem(
                    "native.argv",
                    f"expected `<python> -m {_translate.ENTRY_MODULE} ...`",
                    found=" ".join(native.argv[:3]),
                )
            ]
        args = native.argv[3:]
        # the spec's native.openrlhf tokens are appended last by translate: blame them, not rladapt
        first_user = len(args) - len(_translate.split_native(list(native.passthrough)))
        origin = {i: (NATIVE_FIELD if i >= first_user else "native.argv") for i in range(len(args))}
        found = problems(parser, args, origin, native.version)
        if found:
            return found
        namespace = parse(parser, args).namespace
        return check(FlagView.from_namespace(Version(native.version), namespace, NATIVE_FIELD))

    def checkpoint_layout(self, native: NativeLaunch) -> CheckpointLayout:
        resume = (versions.spell(native.version, "load_checkpoint"),)
        return CheckpointLayout(
            root=native.checkpoint_dir or "ckpt/checkpoints_ppo_ray",
            step_dir_pattern="_actor/global_step{step}",
            latest_marker="_actor/latest",
            resume_args=resume if resume[0] in native.argv else (),
            notes=(
                "_actor/global_stepN holds DeepSpeed shards; _actor/latest (written by DeepSpeed) names the tag "
                "that a resume loads",
                "_critic/ has the same layout when the estimator is gae (PPO with a critic)",
                "global_stepN_hf/ holds Hugging Face weights when checkpoint.save_hf is set; the final model is "
                "written to <ckpt>/final after training",
                "the resume state changed at 0.8.1 and 0.9.1 (consumed_samples, then global_step/episode with a "
                "stateful dataloader, then total_consumed_prompts): resume with the release that saved",
            ),
        )


@hookimpl
def rladapt_register_frameworks() -> list[FrameworkAdapter]:
    return [OpenRLHFAdapter()]


@hookimpl
def rladapt_register_patches() -> list[Patch]:
    return list(PATCHES)
