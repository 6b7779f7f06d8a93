import UsherCore

/// PINs (`set_pin`, `unlock`) are hashed as the local provider hashes passwords: scrypt, salted, on the hashing pool.
extension PasswordHasher: SecretHasher {}
