/* test_bigvalue.c: placeholder. */
int main(void)
{
	return 0;
}
