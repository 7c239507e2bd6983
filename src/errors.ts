/**
 * One base class with a stable `code`; wrapped errors keep their `cause`.
 * API errors carry their HTTP status and become `{ code, detail }` bodies.
 */
export class HookRelayError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

export class ConfigError extends HookRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("HR_ERR_CONFIG", message, options);
  }
}

export class DatabaseError extends HookRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("HR_ERR_DATABASE", message, options);
  }
}

/**
 * An error the API answers with its own status and `{ code, detail }` body. The API builds
 * them with api/errors.ts, whose registry gives each code its one status.
 */
export class ApiError extends HookRelayError {
  readonly status: number;
  /** extra response headers, e.g. Retry-After on a 429 */
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: string,
    detail: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(code, detail, options);
    this.status = status;
    this.headers = options?.headers ?? {};
  }

  toJSON(): { code: string; detail: string } {
    return { code: this.code, detail: this.message };
  }
}
