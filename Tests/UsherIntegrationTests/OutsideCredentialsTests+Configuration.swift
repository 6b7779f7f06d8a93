import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// Outside credential sections that the daemon refuses to start with.
extension OutsideCredentialsTests {
    @Test(arguments: [
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k.json\"\nbogus = 1\n",
            "providers.local.jwt.bogus"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k.json\"\nalgorithms = [\"HS256\"]\n",
            "providers.local.jwt.algorithms"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_url = \"http://auth.example.com/k\"\n",
            "providers.local.jwt.jwks_url"
        ),
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k\"\njwks_url = \"https://a/k\"\n",
            "providers.local.jwt"
        ),
        ("[providers.local.jwt]\naudience = \"a\"\njwks_file = \"/k.json\"\n", "providers.local.jwt.issuer"),
        (
            "[providers.local.id_token.google]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k\"\nsubject_claim = \"x\"\n",
            "providers.local.id_token.google.subject_claim"
        ),
        ("[providers.local.function]\ncommand = [\"auth-hook\"]\n", "providers.local.function.command"),
        (
            "[providers.local.function]\ncommand = [\"/bin/true\"]\nmax_concurrent = 0\n",
            "providers.local.function.max_concurrent"
        ),
        (
            "[providers.local.function]\ncommand = [\"/bin/true\"]\ntimeout = \"10ms\"\n",
            "providers.local.function.timeout"
        ),
        ("[providers.local.function]\ncommand = [\"/bin/true\"]\nshell = true\n", "providers.local.function.shell"),
    ])
    func badConfigurationsNameTheKeyAndTheFile(_ section: String, key: String) async throws {
        try await expectConfigurationError("[providers.local]\ntype = \"local\"\n\n" + section, naming: key)
    }
}
