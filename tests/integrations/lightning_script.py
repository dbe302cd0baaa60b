"""A plain Lightning script (Fabric or Trainer); the only accel line is the import that registers "accel".

Usage: python lightning_script.py fabric|trainer [--precision P] [--devices N]. Rank 0 prints
one JSON line: the device the parameters live on, the autocast dtype seen inside forward,
the losses (float hex, exact) and the world size.
"""

import argparse
import json

import torch

import accel_abstraction.integrations.lightning  # noqa: F401  (registers accelerator="accel")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        self.seen: list[str] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        self.seen.append(str(y.dtype))
        return y


def data(rank: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(rank)
    return [(torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)) for _ in range(3)]


def fabric_run(args: argparse.Namespace) -> dict:
    from lightning.fabric import Fabric

    fabric = Fabric(accelerator="accel", precision=args.precision, devices=args.devices)
    fabric.launch()
    torch.manual_seed(0)
    net = Net()
    model, opt = fabric.setup(net, torch.optim.SGD(net.parameters(), lr=0.1))
    losses = []
    for x, y in data(fabric.global_rank):
        x, y = fabric.to_device((x, y))
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
        fabric.backward(loss)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return {"rank": fabric.global_rank, "world": fabric.world_size, "device": str(next(model.parameters()).device),
            "dtype": net.seen[-1], "losses": [float(v).hex() for v in losses],
            "strategy": type(fabric.strategy).__name__}


def trainer_run(args: argparse.Namespace) -> dict:
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.net = Net()
            self.losses: list[float] = []
            self.devices: list[str] = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x).float(), y)
            self.losses.append(loss.item())
            self.devices.append(str(loss.device))
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    module = Module()
    trainer = L.Trainer(accelerator="accel", devices=args.devices, precision=args.precision, max_epochs=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(module, train_dataloaders=torch.utils.data.DataLoader(data(0), batch_size=None))
    return {"rank": trainer.global_rank, "world": trainer.world_size, "device": module.devices[-1],
            "dtype": module.net.seen[-1], "losses": [float(v).hex() for v in module.losses],
            "strategy": type(trainer.strategy).__name__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["fabric", "trainer"])
    parser.add_argument("--precision", default="32-true")
    parser.add_argument("--devices", default="1")
    args = parser.parse_args()
    args.devices = int(args.devices) if args.devices.isdigit() else args.devices
    out = fabric_run(args) if args.kind == "fabric" else trainer_run(args)
    if out["rank"] == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
