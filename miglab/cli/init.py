"""``miglab init DIR``: write a starter project -- ``ansible.cfg``, ``inventories/sim`` (the
built-in simulated lab), ``inventories/example-r750xa`` (Dell's validated design), and the
example campaigns under ``campaigns/`` -- from the package's ``cli/starter`` folder.

Nothing is overwritten: a file that exists with other contents is a problem (exit 2, one line
each, nothing written); one with the same contents is left as it is, so a second init changes
nothing."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from miglab.errors import EXIT_OK, Problem, ValidationError

STARTER = "starter"


def starter_files() -> dict[str, bytes]:
    """The starter project: relative path -> contents (the checkout's own inventories and
    campaigns; in a wheel, copies of them)."""
    files: dict[str, bytes] = {}

    def walk(node, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                if child.name != "__pycache__":
                    walk(child, rel + "/")
            else:
                files[rel] = child.read_bytes()

    walk(resources.files("miglab.cli") / STARTER, "")
    return files


def plan_init(folder: Path, files: dict[str, bytes]) -> tuple[list[str], list[Problem]]:
    """Which files to write, and the problems (existing files with other contents)."""
    write, problems = [], []
    if folder.exists() and not folder.is_dir():
        return [], [Problem(str(folder), "miglab init", "exists and is not a folder")]
    for rel, data in files.items():
        target = folder / rel
        if target.is_dir() or (target.exists() and not target.is_file()):
            problems.append(Problem(str(target), "miglab init", "exists and is not a file"))
        elif target.is_file():
            if target.read_bytes() != data:
                problems.append(
                    Problem(str(target), "miglab init", "exists with other contents (kept)")
                )
        else:
            write.append(rel)
    return write, problems


def cmd_init(args) -> int:
    folder = Path(args.dir)
    files = starter_files()
    write, problems = plan_init(folder, files)
    if problems:
        raise ValidationError(problems)
    for rel in write:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[rel])
        # an example vault file may hold a password once filled in: owner only
        if "vault" in target.name:
            target.chmod(0o600)
    for rel in write:
        print(f"wrote {folder / rel}")
    kept = len(files) - len(write)
    print(f"{folder}: a miglab project ({len(write)} file(s) written, {kept} unchanged)")
    print(
        f"next: cd {folder}; miglab validate campaigns/r750xa-a100-80gb-mig.yml; miglab sim up; "
        "miglab run campaigns/r750xa-a100-80gb-mig.yml (playbooks from the collection miglab.lab: "
        "ansible-galaxy collection install miglab-lab-<version>.tar.gz)"
    )
    return EXIT_OK
