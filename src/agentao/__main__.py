from agentao.cli import main

raise SystemExit(main())
