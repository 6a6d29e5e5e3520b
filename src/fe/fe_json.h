/* fe_json.h: the cJSON additions the tools' --jsonl output shares (not installed). */
#ifndef MATE_FE_JSON_H_INCLUDED
#define MATE_FE_JSON_H_INCLUDED

#include <math.h>

#include <cjson/cJSON.h>

/* key: v, or null when v is not finite (JSON has no NaN or infinity). */
static inline void
mate_fe_json_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* key: s, or null when s is NULL. */
static inline void
mate_fe_json_str(cJSON *o, const char *key, const char *s)
{
	if (s != NULL)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

#endif /* MATE_FE_JSON_H_INCLUDED */
