"""What happens to a RayJob's strings between the manifest and the job, reproduced with our own code and real shells.

``kubelet_expand`` follows the kubelet's variable expansion of container ``env`` values and ``args``
(Kubernetes ``third_party/forked/golang/expansion``): ``$(NAME)`` becomes the variable's value when NAME is defined
and stays as written otherwise, ``$$`` becomes ``$``, any other ``$`` stays.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence


def kubelet_expand(text: str, env: Mapping[str, str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                out.append(env.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out)


def shell_words(shell: Sequence[str], command_line: str, cwd: str) -> list[str]:
    """The words a real shell makes of ``command_line`` (run as ``printf '%s\\0' <command_line>``)."""
    result = subprocess.run(
        [*shell, f"printf '%s\\0' {command_line}"],
        cwd=cwd,
        capture_output=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    return result.stdout.decode().split("\0")[:-1]


def kuberay_k8sjob_argv(entrypoint: str, submitter_env: Mapping[str, str], cwd: str) -> list[str]:
    """The argv the Ray job driver finally runs, from a RayJob ``entrypoint`` in K8sJobMode.

    The chain (KubeRay ``BuildJobSubmitCommand`` and Ray's ``ray job submit``): the kubelet expands the submitter
    container's args; ``bash -ce`` parses ``ray job submit ... -- <entrypoint>``; the Ray CLI joins the words with
    ``shlex.join``; the job supervisor runs that with ``/bin/sh -c``.
    """
    expanded = kubelet_expand(entrypoint.strip(), submitter_env)
    submitted = shell_words(["bash", "-ce"], expanded, cwd)
    return shell_words(["sh", "-c"], shlex.join(submitted), cwd)
