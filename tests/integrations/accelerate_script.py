"""A plain ``accelerate`` script: no accel code. The tests run it alone and under ``accelerate launch``.

accelerate is imported before torch, and the optimizer is made before ``accelerator.prepare``
(accelerate's documented order). Prints one JSON line per process: its rank, the number of processes, accelerate's device, distributed type and
process-group backend, the gathered losses (float hex) and the trained weight (float hex, exact).
"""

import json

import accelerate  # before torch, as many scripts do: torch's autoload then runs inside accelerate's import
import torch


def main() -> None:
    accelerator = accelerate.Accelerator()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(torch.linspace(-1, 1, 32).reshape(8, 4), torch.ones(8, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        losses.extend(float(v).hex() for v in accelerator.gather(loss.detach()[None]).cpu())
    weight = accelerator.unwrap_model(model).weight.detach().cpu().flatten()
    print(json.dumps({
        "rank": accelerator.process_index,
        "processes": accelerator.num_processes,
        "device": str(accelerator.device),
        "distributed_type": str(accelerator.distributed_type.value),
        "process_group": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "losses": losses,
        "weight": [float(v).hex() for v in weight],
    }), flush=True)
    # Every rank reaches the teardown together: a gloo group destroyed on one rank while its peer
    # is still in its last collective can abort the process ("terminate called without an active
    # exception", seen once in CI on the CPU leg of the two-process test).
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
