import UsherCore
import UsherProtocol

extension MethodHandler {
    /// Lists of at most this many users (without `limit`) are answered on the event loop; longer ones are built off
    /// it, so one `list_users` of a huge device does not hold up the other connections of its loop.
    static let inlineListLimit = 1000

    /// `list_users`: every user on the device, a page at a time.
    static let listUsers = MethodHandler(
        ListUsersRequest.self,
        permission: .read,
        reach: .device,
        read: { request, call in
            let view = call.registry.view
            guard request.limit != nil else {
                let answer = view.listUsersAnswer(maximumUsers: Self.inlineListLimit) { page in
                    var writer = WireWriter(capacity: 512 * page.users.count + 32)
                    ListUsersRequest.Result(page).write(to: &writer)
                    return writer.bytes
                }
                return answer.map { ReadAnswer(Reply.result(id: call.id, json: $0)) }
            }
            if let limit = request.limit, request.after == nil {
                // The first page, which a client polling the list reads again and again: encoded once per change.
                let answer = view.firstPageAnswer(limit: Int(limit)) { page in
                    var writer = WireWriter(capacity: 800 * page.users.count + 64)
                    ListUsersRequest.Result(page).write(to: &writer)
                    return writer.bytes
                }
                return ReadAnswer(Reply.result(id: call.id, json: answer))
            }
            let result = ListUsersRequest.Result(
                try view.listUsers(
                    limit: request.limit.map(Int.init),
                    after: request.after.map(UserPage.Position.init(after:))
                )
            )
            return ReadAnswer(
                Reply.result(id: call.id, capacity: 800 * result.users.count + 64) { result.write(to: &$0) }
            )
        },
        answer: { request, call in
            // Too long to answer on the event loop: taken from the published state here, off the loop, and written a
            // piece at a time.
            let page = try call.registry.view.listUsers(
                limit: request.limit.map(Int.init),
                after: request.after.map(UserPage.Position.init(after:))
            )
            let result = ListUsersRequest.Result(page)
            return MethodHandler.Answer(.streamed(ListLineChunks(id: call.id, result: result)))
        }
    )
}
