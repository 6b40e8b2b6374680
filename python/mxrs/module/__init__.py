"""``mx.mod``: training a Symbol with MXNet 1.x's Module API (bind, init_params,
init_optimizer, forward/backward/update, fit, score, predict, checkpoints); ``BucketingModule``
for inputs of varying shapes."""

from .base_module import BaseModule, BatchEndParam
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .module import Module

__all__ = ["BaseModule", "BatchEndParam", "BucketingModule", "DataParallelExecutorGroup", "Module"]
