import Foundation
import Testing
import UsherProtocol
import UsherTestSupport

/// `list_users` with `limit` and `after`: pages in the order users were added, a `next` cursor until the last page,
/// and the same users as the whole list.
@Suite(.integrationHangGuard)
struct PagingTests {
    static func ids(_ result: JSONValue) -> [String] {
        guard case .array(let users)? = result["users"] else { return [] }
        return users.compactMap { $0["id"]?.stringValue }
    }

    @Test func pagesCoverTheWholeListAndEndWithoutNext() async throws {
        let daemon = try DaemonProcess()
        try await ProtocolTests.seedUsers(25, into: daemon.stateDirectory)
        try await DaemonProcess.using(daemon) { daemon in
            try await daemon.start()
            let client = try daemon.connect()
            let whole = try await client.result("list_users")
            #expect(whole["next"] == nil, "without limit, the answer is as it always was")
            let all = Self.ids(whole)
            #expect(all.count == 25)

            var paged: [String] = []
            var after: JSONValue?
            var pages = 0
            repeat {
                var params: [String: JSONValue] = ["limit": 10]
                if let after { params["after"] = after }
                let page = try await client.result("list_users", params)
                paged += Self.ids(page)
                after = page["next"]
                pages += 1
                #expect(page["generation"] == whole["generation"])
            } while after != nil && pages < 10
            #expect(pages == 3)
            #expect(paged == all)

            // A user removed after the cursor is skipped; the page after the cursor is still right.
            let first = try await client.result("list_users", ["limit": 5])
            let cursor = try #require(first["next"])
            _ = try await client.result("remove_user", ["user_id": .string(all[5])])
            let second = try await client.result("list_users", ["limit": 5, "after": cursor])
            #expect(Self.ids(second) == Array(all[6..<11]))
        }
    }

    @Test func badPagingParamsAreRefusedClearly() async throws {
        try await DaemonProcess.with { daemon in
            let client = try daemon.connect()
            for params: [String: JSONValue] in [
                ["limit": 0], ["limit": 10_001], ["limit": "10"], ["after": "a1"], ["limit": 5, "after": "nope"],
                ["limit": 5, "after": 7],
            ] {
                #expect(try await client.errorCode("list_users", params) == "invalid_params", "for \(params)")
            }
            // The connection carries on.
            #expect(try await client.result("list_users", ["limit": 1])["users"] != nil)
        }
    }
}
