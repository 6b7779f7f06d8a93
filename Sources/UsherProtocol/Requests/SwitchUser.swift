extension SwitchUserRequest {
    public mutating func validate(_ params: Params) throws(ResponseError) {
        try ParamsDecoder.check(self.ifGeneration, in: 0...Int64.max, "if_generation")
    }
}
