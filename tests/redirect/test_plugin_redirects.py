"""Backends contribute their own redirects through the accel_redirects hook."""

from __future__ import annotations

import pytest
import torch

import accel_abstraction.plugins as plugins
from accel_abstraction import hookimpl
from accel_abstraction.redirect import Redirect, redirect_cuda


class Contributes:
    @hookimpl
    def accel_redirects(self, backend, register):  # type: ignore[no-untyped-def]
        def properties(device=None):  # type: ignore[no-untyped-def]
            return {"name": f"{backend.name} device"}

        register(Redirect(torch.cuda, "get_device_properties", properties, "device", hint="my.properties()"))


class Broken:
    @hookimpl
    def accel_redirects(self, backend, register):  # type: ignore[no-untyped-def]
        register(("torch.cuda", "x", None))


def _with_plugin(obj: object, name: str) -> None:
    plugins.reset()
    plugins.register_plugin(obj, name)


def test_plugin_redirect_replaces_the_core_one_and_is_reported() -> None:
    _with_plugin(Contributes(), "contributes")
    original = torch.cuda.get_device_properties
    with redirect_cuda() as r:
        assert torch.cuda.get_device_properties(0) == {"name": "cpu device"}
    assert torch.cuda.get_device_properties is original
    [site] = [s for s in r.sites() if s.api == "torch.cuda.get_device_properties"]
    assert site.category == "device" and site.hint == "my.properties()" and site.count == 1


def test_plugin_registering_something_else_is_dropped_alone() -> None:
    # the hook is called plugin by plugin (PluginHost.call_each): the junk is refused with a
    # warning naming the plugin, and the core's redirects still run the script
    _with_plugin(Broken(), "broken")
    with pytest.warns(RuntimeWarning, match=r"'broken' .*accel_redirects registered an invalid item: PluginError: "
                      r"register\(\) takes an accel_abstraction.redirect.Redirect"):  # fmt: skip
        with redirect_cuda():
            assert torch.cuda.is_available()
