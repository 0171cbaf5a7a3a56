from c3prof.cli import main

raise SystemExit(main())
