# ruff: noqa
"""Evaluation entry point of a robot-policy project: a click command and RNG checkpointing."""
import click
import torch


@click.command()
@click.option("-c", "--checkpoint", required=True)
@click.option("-d", "--device", default="cuda:0")  # expect: ACC101
@click.option("--episodes", default=10)
def evaluate(checkpoint, device, episodes):
    policy = torch.load(checkpoint, map_location="cpu")
    return policy.to(torch.device(device)), episodes


def capture_rng() -> dict:
    state = {"torch": torch.random.get_rng_state()}
    if torch.cuda.is_available():  # expect: ACC121
        state["cuda"] = torch.cuda.random.get_rng_state()  # expect: ACC141
    return state


def restore_rng(state: dict) -> None:
    torch.random.set_rng_state(state["torch"])
    if torch.cuda.is_available() and "cuda" in state:  # expect: ACC121
        torch.cuda.random.set_rng_state(state["cuda"])  # expect: ACC141
