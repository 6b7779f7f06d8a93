import UsherDaemon

@main
struct Usherd {
    static func main() async {
        await UsherdCommand.main()
    }
}
