
import sys
from pathlib import Path

#: The repository checkout this CLI belongs to, when it is one: the Prefect flows and tasks are folders of the
#: repository (``flows/``, ``tasks/``), not installed packages, so that no other project's top-level ``tasks`` or
#: ``flows`` collides with them (issue 23). The CLI is installed editable from its checkout and finds them here.
CHECKOUT = Path(__file__).resolve().parents[1]


def _use_checkout() -> None:
    if (CHECKOUT / "flows" / "__init__.py").is_file() and (CHECKOUT / "tasks" / "__init__.py").is_file():
        if not sys.path or Path(sys.path[0] or ".").resolve() != CHECKOUT:
            sys.path.insert(0, str(CHECKOUT))


_use_checkout()
