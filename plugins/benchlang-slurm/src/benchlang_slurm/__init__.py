"""benchlang on Slurm: ``hosts slurm { partition "..." nodes N ... }`` (docs/slurm.md).

The allocation is a holder batch job (``sbatch --parsable``), released with ``scancel``;
every command runs as a job step (``srun --jobid --nodelist``) on the node of its logical
host, through benchlang's own agent, which measures it on the node.
"""

from benchlang_slurm.backend import SlurmBackend

__all__ = ["SlurmBackend"]
