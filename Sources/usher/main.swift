import UsherCLI

await UsherCommandLine.main()
