import sys

from sqlite_dedup.cli import main

sys.exit(main())
