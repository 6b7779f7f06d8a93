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
        // Opaque access tokens are checked only over https, or plain http on a loopback host.
        (
            "[providers.local.access_token.fb]\nuserinfo_url = \"http://graph.example.com/me\"\n",
            "providers.local.access_token.fb.userinfo_url"
        ),
        (
            "[providers.local.access_token.gh]\nintrospection_url = \"http://10.1.2.3/introspect\"\nclient_id = \"c\"\n",
            "providers.local.access_token.gh.introspection_url"
        ),
        (
            "[providers.local.access_token.gh]\nintrospection_url = \"https://auth.example.com/introspect\"\n",
            "providers.local.access_token.gh.client_id"
        ),
        ("[providers.local.access_token.gh]\nsubject_field = \"id\"\n", "providers.local.access_token.gh"),
        // custom_claims never names a secret.
        (
            "[providers.local.jwt]\nissuer = \"i\"\naudience = \"a\"\njwks_file = \"/k.json\"\ncustom_claims = [\"nonce\"]\n",
            "providers.local.jwt.custom_claims"
        ),
        (
            "[providers.local.access_token.fb]\nuserinfo_url = \"https://graph.example.com/me\"\ncustom_claims = [\"at_hash\"]\n",
            "providers.local.access_token.fb.custom_claims"
        ),
    ])
    func badConfigurationsNameTheKeyAndTheFile(_ section: String, key: String) async throws {
        try await expectConfigurationError("[providers.local]\ntype = \"local\"\n\n" + section, naming: key)
    }
}
