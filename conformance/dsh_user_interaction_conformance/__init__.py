"""The conformance suite for user-interaction providers and services.

Run it with ``python -m dsh_user_interaction_conformance``, from your own
tests with :func:`run_suite`, or through the pytest plugin. The store suite
checks an ask store (``--store``, :func:`run_store_suite`). The strategies in
:mod:`dsh_user_interaction_conformance.strategies` are public too.
:class:`HarnessSubjects` and :class:`HarnessServices` run an implementation
in another process, in any language, over ``spec/harness.md``.

Each name loads its private module on first use, so importing the package
costs nothing: the harness child (``dsh_user_interaction_conformance.child``)
serves a subject without importing Hypothesis, pytest or jsonschema.
"""

import importlib
import typing

if typing.TYPE_CHECKING:
    from ._baseline import BaselineEntry as BaselineEntry
    from ._baseline import FailureForm as FailureForm
    from ._baseline import parse_baseline as parse_baseline
    from ._baseline import recorded_baseline as recorded_baseline
    from ._behaviour import Action as Action
    from ._behaviour import Behaviour as Behaviour
    from ._behaviour import Dismiss as Dismiss
    from ._behaviour import Nothing as Nothing
    from ._behaviour import Pick as Pick
    from ._behaviour import Revise as Revise
    from ._behaviour import Skip as Skip
    from ._behaviour import Step as Step
    from ._behaviour import TypeText as TypeText
    from ._behaviour import expected_answer as expected_answer
    from ._behaviour import held_after as held_after
    from ._behaviour import revised as revised
    from ._capabilities import Capabilities as Capabilities
    from ._engine import CHECKS as CHECKS
    from ._engine import Check as Check
    from ._engine import CheckOutcome as CheckOutcome
    from ._engine import Draws as Draws
    from ._engine import FailureRecord as FailureRecord
    from ._engine import Scenario as Scenario
    from ._engine import Setup as Setup
    from ._engine import SetupError as SetupError
    from ._harness import HarnessServices as HarnessServices
    from ._harness import HarnessSubjects as HarnessSubjects
    from ._matrix import Matrix as Matrix
    from ._matrix import MatrixCell as MatrixCell
    from ._matrix import MatrixColumn as MatrixColumn
    from ._matrix import ReportError as ReportError
    from ._matrix import build_matrix as build_matrix
    from ._matrix import read_report as read_report
    from ._registry import Requirement as Requirement
    from ._registry import requirements as requirements
    from ._runner import Report as Report
    from ._runner import RequirementResult as RequirementResult
    from ._runner import run_suite as run_suite
    from ._store import DurableDriver as DurableDriver
    from ._store import StoreFactory as StoreFactory
    from ._store import StoreReport as StoreReport
    from ._store import StoreRun as StoreRun
    from ._store import StoreSubject as StoreSubject
    from ._store import durable_subject as durable_subject
    from ._store import make_durable_subject as make_durable_subject
    from ._store import run_store_suite as run_store_suite
    from ._store import sqlite_store_subject as sqlite_store_subject
    from ._subject import Driver as Driver
    from ._subject import Remote as Remote
    from ._subject import ScriptedDriver as ScriptedDriver
    from ._subject import Service as Service
    from ._subject import ServiceFactory as ServiceFactory
    from ._subject import ServiceRegistration as ServiceRegistration
    from ._subject import Subject as Subject
    from ._subject import SubjectFactory as SubjectFactory
    from ._subject import declared_policies as declared_policies
    from ._subject import reference_service as reference_service
    from ._subject import reference_subject as reference_subject
    from ._subject import with_capabilities as with_capabilities
    from ._subject import with_policies as with_policies
    from ._surfaces import ENDINGS as ENDINGS
    from ._surfaces import Ending as Ending
    from ._surfaces import FanOutDriver as FanOutDriver
    from ._surfaces import ScriptedSurface as ScriptedSurface
    from ._surfaces import SurfaceDriver as SurfaceDriver
    from ._surfaces import Told as Told
    from ._surfaces import fan_out_subject as fan_out_subject
    from ._surfaces import make_fan_out_subject as make_fan_out_subject
    from ._web import PROBE_ATTRIBUTE as PROBE_ATTRIBUTE
    from ._web import HttpProbe as HttpProbe
    from ._web import SecretOffer as SecretOffer

__all__ = [
    "CHECKS",
    "ENDINGS",
    "PROBE_ATTRIBUTE",
    "Action",
    "BaselineEntry",
    "Behaviour",
    "Capabilities",
    "Check",
    "CheckOutcome",
    "Dismiss",
    "Draws",
    "Driver",
    "DurableDriver",
    "Ending",
    "FailureForm",
    "FailureRecord",
    "FanOutDriver",
    "HarnessServices",
    "HarnessSubjects",
    "HttpProbe",
    "Matrix",
    "MatrixCell",
    "MatrixColumn",
    "Nothing",
    "Pick",
    "Remote",
    "Report",
    "ReportError",
    "Requirement",
    "RequirementResult",
    "Revise",
    "Scenario",
    "ScriptedDriver",
    "ScriptedSurface",
    "SecretOffer",
    "Service",
    "ServiceFactory",
    "ServiceRegistration",
    "Setup",
    "SetupError",
    "Skip",
    "Step",
    "StoreFactory",
    "StoreReport",
    "StoreRun",
    "StoreSubject",
    "Subject",
    "SubjectFactory",
    "SurfaceDriver",
    "Told",
    "TypeText",
    "build_matrix",
    "declared_policies",
    "durable_subject",
    "expected_answer",
    "fan_out_subject",
    "held_after",
    "make_durable_subject",
    "make_fan_out_subject",
    "parse_baseline",
    "read_report",
    "recorded_baseline",
    "reference_service",
    "reference_subject",
    "requirements",
    "revised",
    "run_store_suite",
    "run_suite",
    "sqlite_store_subject",
    "with_capabilities",
    "with_policies",
]

#: The private module of each exported name: the imports above, for the interpreter.
_MODULES = {
    "Action": "_behaviour",
    "Behaviour": "_behaviour",
    "Dismiss": "_behaviour",
    "Nothing": "_behaviour",
    "Pick": "_behaviour",
    "Revise": "_behaviour",
    "Skip": "_behaviour",
    "Step": "_behaviour",
    "TypeText": "_behaviour",
    "expected_answer": "_behaviour",
    "held_after": "_behaviour",
    "revised": "_behaviour",
    "BaselineEntry": "_baseline",
    "FailureForm": "_baseline",
    "parse_baseline": "_baseline",
    "recorded_baseline": "_baseline",
    "Capabilities": "_capabilities",
    "Matrix": "_matrix",
    "MatrixCell": "_matrix",
    "MatrixColumn": "_matrix",
    "ReportError": "_matrix",
    "build_matrix": "_matrix",
    "read_report": "_matrix",
    "DurableDriver": "_store",
    "durable_subject": "_store",
    "make_durable_subject": "_store",
    "CHECKS": "_engine",
    "Check": "_engine",
    "CheckOutcome": "_engine",
    "Draws": "_engine",
    "FailureRecord": "_engine",
    "Scenario": "_engine",
    "Setup": "_engine",
    "SetupError": "_engine",
    "HarnessServices": "_harness",
    "HarnessSubjects": "_harness",
    "Requirement": "_registry",
    "requirements": "_registry",
    "Report": "_runner",
    "RequirementResult": "_runner",
    "run_suite": "_runner",
    "StoreReport": "_store",
    "StoreRun": "_store",
    "run_store_suite": "_store",
    "StoreFactory": "_store",
    "StoreSubject": "_store",
    "sqlite_store_subject": "_store",
    "Driver": "_subject",
    "ENDINGS": "_surfaces",
    "Ending": "_surfaces",
    "SurfaceDriver": "_surfaces",
    "Told": "_surfaces",
    "FanOutDriver": "_surfaces",
    "ScriptedSurface": "_surfaces",
    "fan_out_subject": "_surfaces",
    "make_fan_out_subject": "_surfaces",
    "Remote": "_subject",
    "ScriptedDriver": "_subject",
    "Service": "_subject",
    "ServiceFactory": "_subject",
    "ServiceRegistration": "_subject",
    "Subject": "_subject",
    "SubjectFactory": "_subject",
    "reference_service": "_subject",
    "reference_subject": "_subject",
    "with_capabilities": "_subject",
    "with_policies": "_subject",
    "declared_policies": "_subject",
    "HttpProbe": "_web",
    "PROBE_ATTRIBUTE": "_web",
    "SecretOffer": "_web",
}


if not typing.TYPE_CHECKING:
    # Hidden from type checkers, which see the imports above: they flag the
    # deprecated name, and a typo of any other still fails.
    def __getattr__(name: str) -> object:
        module = _MODULES.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            globals()[name] = value  # the next lookup finds it without this function
            return value
        # ``Type`` was renamed ``TypeText`` in 0.3.0, since it shadowed ``typing.Type``.
        if name == "Type":
            import warnings  # noqa: PLC0415 - only on the deprecated path

            warnings.warn(
                "dsh_user_interaction_conformance.Type is deprecated; use TypeText "
                "(Type will be removed in 0.4.0)",
                DeprecationWarning,
                stacklevel=2,
            )
            return __getattr__("TypeText")
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
