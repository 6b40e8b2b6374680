"""Train LeNet or an MLP on MNIST with Gluon, on one or several devices and workers.

One process, two devices (two CPU contexts when there is no GPU):

    python examples/train_mnist.py --cpus 2 --kv-store device

A distributed job of 2 workers and 2 servers on this machine:

    mxrs-launch local -n 2 -s 2 python examples/train_mnist.py --kv-store dist_sync

``--gradient-compression fp16`` (or ``bf16``, or MXNet's ``2bit`` with
``--compression-threshold``) compresses the gradients the workers push.

By default the MNIST subset shipped in ``data/mnist`` is used (6,000 training and 1,000 test
images); ``--data-dir`` points at the full set (``python -m mxrs.gluon.data.vision.fetch_mnist``
fetches it).
"""

import argparse
import os
import time

import mxrs as mx
import numpy as np
from lenet import lenet
from mxrs import autograd, gluon
from mxrs.gluon import nn
from mxrs.gluon.data.vision import MNIST, transforms
from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--network", choices=("lenet", "mlp"), default="lenet")
    p.add_argument("--gpus", default="", help="GPUs to train on, e.g. 0,2 (default: CPU)")
    p.add_argument("--cpus", type=int, default=1, help="CPU contexts to train on without GPUs")
    p.add_argument(
        "--kv-store",
        default="device",
        help="local, device, dist_sync, dist_device_sync or dist_async",
    )
    p.add_argument("--work-load-list", default="", help="relative share of each device, e.g. 3,1")
    p.add_argument("--batch-size", type=int, default=32, help="batch size on each worker")
    p.add_argument("--num-epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--data-dir", default=os.path.join(HERE, os.pardir, "data", "mnist"))
    p.add_argument(
        "--gradient-compression",
        choices=("none", "2bit", "fp16", "bf16"),
        default="none",
        help="compress pushed gradients: MXNet's 2bit, or 16-bit floats (fp16, bf16)",
    )
    p.add_argument("--compression-threshold", type=float, default=0.5, help="the threshold of 2bit")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def build(network):
    """The seeds' LeNet (``lenet.py``), or a 2-hidden-layer MLP."""
    if network == "lenet":
        return lenet(nn)
    net = nn.HybridSequential()
    net.add(
        nn.Flatten(),
        nn.Dense(128, activation="relu"),
        nn.Dense(64, activation="relu"),
        nn.Dense(10),
    )
    return net


def contexts(args):
    if args.gpus:
        return [mx.gpu(int(i)) for i in args.gpus.split(",")]
    return [mx.cpu(i) for i in range(args.cpus)]


def evaluate(net, loader, ctx):
    metric = mx.metric.Accuracy()
    for data, label in loader:
        datas = gluon.utils.split_and_load(data, ctx, even_split=False)
        labels = gluon.utils.split_and_load(label, ctx, even_split=False)
        metric.update(labels, [net(d) for d in datas])
    return metric.get()[1]


def main(argv=None):
    args = parse_args(argv)
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    ctx = contexts(args)
    work_load = [float(w) for w in args.work_load_list.split(",")] if args.work_load_list else None
    if work_load is not None and len(work_load) != len(ctx):
        raise SystemExit(f"--work-load-list has {len(work_load)} entries for {len(ctx)} devices")

    store = mx.kv.create(args.kv_store)
    rank, workers = store.rank, store.num_workers
    tag = f"worker {rank}/{workers}: " if workers > 1 else ""

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.13, 0.31)])
    train = MNIST(root=args.data_dir, train=True).transform_first(transform)
    test = MNIST(root=args.data_dir, train=False).transform_first(transform)
    sampler = gluon.data.SplitSampler(len(train), workers, rank)
    train_loader = gluon.data.DataLoader(
        train, batch_size=args.batch_size, sampler=sampler, last_batch="discard"
    )
    test_loader = gluon.data.DataLoader(test, batch_size=256)

    net = build(args.network)
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    compression = None
    if args.gradient_compression != "none":
        compression = {"type": args.gradient_compression}
        if args.gradient_compression == "2bit":
            compression["threshold"] = args.compression_threshold
    trainer = gluon.Trainer(
        net.collect_params(),
        "sgd",
        {"learning_rate": args.lr, "momentum": args.momentum},
        kvstore=store,
        compression_params=compression,
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # A worker restarted by `mxrs-launch --max-restarts` goes on where the job is: its
    # Parameters get their shapes from one batch, the Trainer pulls the job's weights, and the
    # batches the lost process already trained on are skipped.
    done = 0
    if getattr(store, "rejoined", False):
        for c in ctx:
            net(mx.nd.zeros((1, 1, 28, 28), ctx=c))
        done = trainer.resume_step()
        print(f"{tag}rejoined the job at step {done}", flush=True)

    acc = float("nan")
    for epoch in range(args.num_epochs):
        if done >= len(train_loader):  # an epoch the lost process finished: its shuffle only
            done -= len(train_loader)
            list(sampler)
            continue
        metric, total_loss, seen, tic = mx.metric.Accuracy(), 0.0, 0, time.time()
        # A bar updated by hand: it counts batches as they finish (a bar over the loader
        # would show a stale count whenever the postfix redraws it).
        bar = tqdm(
            total=len(train_loader),
            desc=f"{tag}epoch {epoch + 1}/{args.num_epochs}",
            disable=args.no_progress,
            unit="batch",
            miniters=1,  # redraw whenever mininterval passed, however the rate varies
        )
        for data, label in train_loader:
            bar.update(1)
            if done:
                done -= 1
                continue
            datas = gluon.utils.split_and_load(
                data, ctx, even_split=False, work_load_list=work_load
            )
            labels = gluon.utils.split_and_load(
                label, ctx, even_split=False, work_load_list=work_load
            )
            with autograd.record():
                outs = [net(d) for d in datas]
                losses = [loss_fn(o, lab) for o, lab in zip(outs, labels, strict=True)]
            autograd.backward(losses)
            trainer.step(data.shape[0])
            metric.update(labels, outs)
            total_loss += sum(float(loss.sum().asscalar()) for loss in losses)
            seen += data.shape[0]
            bar.set_postfix(
                loss=f"{total_loss / seen:.4f}",
                samples_per_s=f"{seen / (time.time() - tic):.0f}",
                refresh=False,  # drawn with the count, at most every mininterval
            )
        bar.close()
        acc = evaluate(net, test_loader, ctx)
        print(
            f"{tag}epoch {epoch + 1}: train loss {total_loss / max(seen, 1):.4f}, "
            f"train accuracy {metric.get()[1]:.4f}, test accuracy {acc:.4f}, "
            f"{seen / (time.time() - tic):.0f} samples/s",
            flush=True,
        )
    if done or acc != acc:  # nothing left to train after a restart: the job's weights
        acc = evaluate(net, test_loader, ctx)
    print(f"{tag}final test accuracy {acc:.4f}", flush=True)
    return acc


if __name__ == "__main__":
    main()
