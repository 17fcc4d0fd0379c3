// The API error family: one ApiError(type, code, message, param?) maps to the error envelope; codes come
// from the registry in ./error-codes. Pure: the HTTP layer turns these into responses; anything else becomes a 500 internal_error.
import { ERROR_CODES, type ErrorCode, type ErrorType } from './error-codes.js';

export type { ErrorCode, ErrorType };

export class ApiError extends Error {
  readonly status: number;
  /** `type` must be the registry's type of `code` (test/unit/error-codes.test.ts checks every call); the status defaults to the registry's. */
  constructor(
    readonly type: ErrorType,
    readonly code: ErrorCode,
    message: string,
    readonly param?: string,
    status?: number,
  ) {
    super(message);
    this.status = status ?? ERROR_CODES[code].status;
  }
}

/** The resources whose `<resource>_not_found` code is in the registry. */
type Resource = ErrorCode extends infer C ? (C extends `${infer R}_not_found` ? R : never) : never;

export const invalid = (param: string, message: string, code: ErrorCode = 'invalid_parameter') =>
  new ApiError('validation_error', code, message, param);
export const notFound = (resource: Resource) =>
  new ApiError('not_found', `${resource}_not_found`, `No such ${resource.replace(/_/g, ' ')}.`);
