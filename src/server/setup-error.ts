// A reason the server cannot start that the operator can fix (one line, no stack trace).
export class ServerSetupError extends Error {}
