"""The ``miglab`` command: thin argument parsing around the core; bad input exits 2.

The parser and ``main``; the commands live by group in :mod:`miglab.cli.lab`,
:mod:`miglab.cli.gpu` and :mod:`miglab.cli.results`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from miglab import __version__
from miglab.cli.gpu import (
    cmd_gpu_fit,
    cmd_gpu_from_mig_parted,
    cmd_gpu_import_mig,
    cmd_gpu_inspect,
    cmd_gpu_list,
    cmd_gpu_mig_parted,
    cmd_gpu_profiles,
)
from miglab.cli.init import cmd_init
from miglab.cli.lab import cmd_plan, cmd_run, cmd_sim, cmd_status, cmd_validate
from miglab.errors import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    ValidationError,
    problem_lines,
)


# --- parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="miglab",
        description="Plan, build and benchmark MIG-backed vGPU labs on VMware vSphere.",
    )
    ap.add_argument("--version", action="version", version=f"miglab {__version__}")
    ap.add_argument(
        "--project-dir",
        metavar="DIR",
        help="the project folder: inventories, campaigns, results, artifacts, caches "
        "(default: MIGLAB_PROJECT_DIR, else the current directory)",
    )
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def campaign_cmd(name, help_, func):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("campaign", metavar="CAMPAIGN", help="campaign YAML file")
        p.add_argument(
            "-i",
            "--inventory",
            metavar="INVENTORY",
            help="Ansible YAML inventory of the lab (default: inventories/sim)",
        )
        p.set_defaults(func=func)
        return p

    p = sub.add_parser(
        "init",
        help="write a starter project: ansible.cfg, inventories (simulated lab, R750xa), campaigns",
    )
    p.add_argument("dir", metavar="DIR", help="the project folder (made if missing)")
    p.set_defaults(func=cmd_init)

    campaign_cmd(
        "validate", "check a campaign (and that it fits the lab); exit 2 when invalid", cmd_validate
    )
    p = campaign_cmd("plan", "where every VM lands, GPU maps, capacity left, schedule", cmd_plan)
    p.add_argument("--json", action="store_true", help="print the plan as JSON")

    p = campaign_cmd("run", "run the main job (miglab.lab.site) for a campaign on the lab", cmd_run)
    p.add_argument(
        "--tags",
        type=lambda v: [t for t in v.split(",") if t],
        help="only these phases: validate,hosts,vms,guests,mlperf,report",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip MLPerf runs whose VALID results are already collected",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="move the campaign's earlier results aside (results/<campaign>.<time>) and redo all",
    )
    p.add_argument(
        "--results-dir", metavar="DIR", help="the results tree (default: the project's results/)"
    )
    p.add_argument("--check", action="store_true", help="check mode: change nothing")
    p.add_argument(
        "-e",
        "--extra-vars",
        action="append",
        default=[],
        metavar="VARS",
        help="extra variables for the playbooks, as for ansible-playbook (key=value, YAML/JSON, "
        "or @file); repeatable",
    )
    # default: the project's site.yml (a checkout), else the collection's miglab.lab.site
    p.add_argument("--playbook", help=argparse.SUPPRESS)
    sim = sub.add_parser("sim", help="the built-in simulated lab: vCenter, ESXi hosts, guest VMs")
    ssub = sim.add_subparsers(dest="sim_command", required=True, metavar="SIM_COMMAND")
    p = ssub.add_parser("up", help="start it (builds images, simulator, golden guest once)")
    p.add_argument(
        "-i", "--inventory", metavar="HOSTS", help="lab hosts (inventories/sim/hosts.yml)"
    )
    p.add_argument("--rebuild-golden", action="store_true", help="rebuild the golden guest image")
    p.set_defaults(func=cmd_sim)
    p = ssub.add_parser("down", help="stop it and remove its containers (the results stay)")
    p.set_defaults(func=cmd_sim)
    p = ssub.add_parser("status", help="what runs: vCenter, ESXi hosts, guest VMs")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser("status", help="is the lab in use; the last runs")
    p.add_argument("-i", "--inventory", metavar="INVENTORY")
    p.set_defaults(func=cmd_status)

    gpu = sub.add_parser("gpu", help="GPU catalog, MIG placement, nvidia-smi and mig-parted files")
    gsub = gpu.add_subparsers(dest="gpu_command", required=True, metavar="GPU_COMMAND")
    p = gsub.add_parser("list", help="GPU models in the catalog")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_list)
    p = gsub.add_parser("profiles", help="MIG profiles of a GPU model")
    p.add_argument("gpu", metavar="GPU", help="catalog name, alias, nvidia-smi name or PCI id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_profiles)
    p = gsub.add_parser(
        "import-mig",
        help="a GPU model from `nvidia-smi mig -lgip`/`-lgipp` output, found anywhere in a saved "
        "capture (other nvidia-smi output and prompts are skipped, with a note)",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--name", help="GPU name to give the imported model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_import_mig)
    p = gsub.add_parser(
        "inspect",
        help="GPUs, driver and MIG mode from `nvidia-smi -q` (or -q -x), "
        "`--query-gpu ... --format=csv` and `-L` output, anywhere in a saved capture",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_inspect)
    p = gsub.add_parser("fit", help="do these MIG profiles fit on one GPU? (exit 1 when not)")
    p.add_argument("gpu", metavar="GPU")
    p.add_argument("profiles", metavar="PROFILE", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_gpu_fit)
    p = gsub.add_parser("mig-parted", help="export a campaign's MIG layouts as a mig-parted file")
    p.add_argument("campaign", metavar="CAMPAIGN")
    p.add_argument("-i", "--inventory", metavar="INVENTORY")
    p.add_argument("-o", "--output", metavar="FILE")
    p.set_defaults(func=cmd_gpu_mig_parted)
    p = gsub.add_parser(
        "from-mig-parted", help="turn a mig-parted config file into a campaign skeleton"
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--gpu",
        help="GPU model whose configs to import (default: the one model the device-filters name)",
    )
    p.add_argument("--config", metavar="NAME", help="import this config only")
    p.add_argument("--name", default="from-mig-parted", help="campaign name")
    p.set_defaults(func=cmd_gpu_from_mig_parted)
    from miglab.cli.results import register as register_results

    register_results(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.project_dir:
        from miglab.adapters.project import ENV, ansible_env

        folder = Path(args.project_dir)
        if not folder.is_dir():
            print(f"error: {args.project_dir}: --project-dir: not a folder", file=sys.stderr)
            return EXIT_INVALID
        os.environ[ENV] = str(folder.resolve())
        # Ansible inside this process (validate, plan) reads the project's ansible.cfg as well
        for key, value in ansible_env(folder.resolve()).items():
            os.environ.setdefault(key, value)
    try:
        return args.func(args)
    except ValidationError as exc:
        print("\n".join(problem_lines(exc.problems)), file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug, not bad input: say so in one line unless debugging
        if os.environ.get("MIGLAB_DEBUG"):
            raise
        print(
            f"internal error: {type(exc).__name__}: {exc} (set MIGLAB_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
