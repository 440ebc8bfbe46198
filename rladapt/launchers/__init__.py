"""Built-in launchers (local, ray, slurm, kubernetes), each a pluggy plugin registering one ``Launcher``."""
