"""`python -m nmt_cli ...` runs the `nmt` command."""

import sys

from nmt_cli.main import main

sys.exit(main())
