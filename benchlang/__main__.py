from benchlang.cli import main

raise SystemExit(main())
