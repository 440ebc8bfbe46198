"""What an OpenRLHF resume takes from the checkpoint rather than the spec.

From OpenRLHF's load code (read at 0.9.10; the same calls from 0.5.9.post1 on): ``openrlhf/trainer/ray/ppo_actor.py``
(and ``ppo_critic.py``) call ``strategy.load_ckpt`` (``openrlhf/utils/deepspeed/deepspeed.py`` ``load_ckpt``, with
``load_optimizer_states=True, load_lr_scheduler_states=True``): DeepSpeed restores each role's optimizer
(``param_groups``: the launch's learning rate and ``--l2``) and LR scheduler. ``openrlhf/trainer/ppo_trainer.py``
``fit`` then restores ``data_loader_state_dict`` into the prompts' ``StatefulDataLoader``, whose state counts the
batches (``--rollout_batch_size`` prompts each) already yielded: with another batch size, seed or data that
position is not where training stopped.
"""

from __future__ import annotations

from rladapt.plugins.resumes import Restored

_LOAD = "openrlhf utils/deepspeed/deepspeed.py load_ckpt, trainer/ppo_trainer.py fit (0.9.10)"
_OPTIM = "DeepSpeed's load_ckpt restores the role's optimizer and LR scheduler with the launch's value"
_DATA = (
    "the prompts' StatefulDataLoader state counts the batches yielded: with another batch, order or data the "
    "position it restores is not where training stopped"
)

RESTORED = (
    Restored("spec.training.optimizer.lr", _OPTIM, _LOAD),
    Restored("spec.training.optimizer.weight_decay", _OPTIM, _LOAD),
    Restored("spec.training.critic_optimizer.lr", _OPTIM, _LOAD),
    Restored("spec.training.critic_optimizer.weight_decay", _OPTIM, _LOAD),
    *(
        Restored(name, _DATA, _LOAD)
        for name in ("spec.training.global_batch", "spec.data.seed", "spec.data.shuffle", "spec.data.train")
    ),
)


def restores(version: str) -> tuple[Restored, ...]:
    return RESTORED
