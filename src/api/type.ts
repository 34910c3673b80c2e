// The TypeBox builders the API's schemas use, imported one by one: a command loads these (about
// 20 KB of TypeBox) instead of TypeBox's whole Type namespace (115 KB, a tenth of `nodes list`'s
// start-up). The server's routes take the full namespace from '@sinclair/typebox' itself.
import {
  Array as TArray,
  Boolean as TBoolean,
  Integer,
  Null,
  Object as TObject,
  Optional,
  Record as TRecord,
  String as TString,
  Union,
  Unknown,
  Unsafe,
} from '@sinclair/typebox';

export const Type = {
  Array: TArray,
  Boolean: TBoolean,
  Integer,
  Null,
  Object: TObject,
  Optional,
  Record: TRecord,
  String: TString,
  Union,
  Unknown,
  Unsafe,
};
