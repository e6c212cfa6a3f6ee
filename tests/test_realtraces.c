/* test_realtraces.c: placeholder. */
int main(void)
{
	return 0;
}
